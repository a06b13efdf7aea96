ALTER TABLE "pages" ADD COLUMN "text" text;--> statement-breakpoint
ALTER TABLE "meetings" ADD COLUMN "minutes_text" text DEFAULT '' NOT NULL;--> statement-breakpoint
-- Backfill: the plain text of each existing body, by the rules of src/richtext/plain-text.ts,
-- in session-only functions that vanish with the migration's connection.
CREATE FUNCTION pg_temp.rich_text_inline(node jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF jsonb_typeof(node) IS DISTINCT FROM 'object' THEN RETURN ''; END IF;
  IF node->>'type' = 'hardBreak' THEN RETURN E'\n'; END IF;
  IF jsonb_typeof(node->'text') = 'string' THEN RETURN node->>'text'; END IF;
  IF jsonb_typeof(node->'content') IS DISTINCT FROM 'array' THEN RETURN ''; END IF;
  RETURN coalesce((SELECT string_agg(pg_temp.rich_text_inline(child), '' ORDER BY ord)
    FROM jsonb_array_elements(node->'content') WITH ORDINALITY AS c(child, ord)), '');
END $$;--> statement-breakpoint
CREATE FUNCTION pg_temp.rich_text_blocks(blocks jsonb, separator text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF jsonb_typeof(blocks) IS DISTINCT FROM 'array' THEN RETURN ''; END IF;
  RETURN coalesce((SELECT string_agg(rendered, separator ORDER BY ord) FROM (
    SELECT pg_temp.rich_text_block(child) AS rendered, ord
    FROM jsonb_array_elements(blocks) WITH ORDINALITY AS c(child, ord)) AS r
    WHERE rendered <> ''), '');
END $$;--> statement-breakpoint
CREATE FUNCTION pg_temp.rich_text_list(node jsonb, start numeric) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  item jsonb;
  position bigint;
  marker text;
  body text;
  lines text[];
  rendered text;
  rendered_items text[] := '{}';
BEGIN
  IF jsonb_typeof(node->'content') IS DISTINCT FROM 'array' THEN RETURN ''; END IF;
  FOR item, position IN SELECT child, ord FROM jsonb_array_elements(node->'content') WITH ORDINALITY AS c(child, ord) LOOP
    marker := CASE WHEN start IS NULL THEN '- ' ELSE (start + position - 1)::text || '. ' END;
    body := CASE WHEN jsonb_typeof(item) = 'object' THEN pg_temp.rich_text_blocks(item->'content', E'\n') ELSE '' END;
    lines := CASE WHEN body = '' THEN ARRAY[''] ELSE string_to_array(body, E'\n') END;
    rendered := regexp_replace(marker || lines[1], '\s+$', '');
    FOR i IN 2 .. coalesce(array_length(lines, 1), 1) LOOP
      rendered := rendered || E'\n' || CASE WHEN lines[i] = '' THEN '' ELSE '  ' || lines[i] END;
    END LOOP;
    rendered_items := rendered_items || rendered;
  END LOOP;
  RETURN array_to_string(rendered_items, E'\n');
END $$;--> statement-breakpoint
CREATE FUNCTION pg_temp.rich_text_block(node jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  start jsonb;
BEGIN
  IF jsonb_typeof(node) IS DISTINCT FROM 'object' THEN RETURN ''; END IF;
  CASE node->>'type'
    WHEN 'doc', 'blockquote' THEN RETURN pg_temp.rich_text_blocks(node->'content', E'\n\n');
    WHEN 'paragraph', 'heading', 'codeBlock', 'text', 'hardBreak' THEN RETURN pg_temp.rich_text_inline(node);
    WHEN 'horizontalRule' THEN RETURN '---';
    WHEN 'bulletList' THEN RETURN pg_temp.rich_text_list(node, NULL);
    WHEN 'orderedList' THEN
      start := node->'attrs'->'start';
      RETURN pg_temp.rich_text_list(node, CASE
        WHEN jsonb_typeof(start) = 'number' AND start::text::numeric = trunc(start::text::numeric)
          AND abs(start::text::numeric) <= 9007199254740991 THEN start::text::numeric
        ELSE 1 END);
    ELSE
      IF jsonb_typeof(node->'text') = 'string' THEN RETURN node->>'text'; END IF;
      IF jsonb_typeof(node->'content') IS DISTINCT FROM 'array' OR NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(node->'content') AS c(child)
        WHERE jsonb_typeof(child) IS DISTINCT FROM 'object' OR child->>'type' IS NULL
          OR child->>'type' NOT IN ('text', 'hardBreak')) THEN
        RETURN pg_temp.rich_text_inline(node);
      END IF;
      RETURN pg_temp.rich_text_blocks(node->'content', E'\n');
  END CASE;
END $$;--> statement-breakpoint
UPDATE "pages" SET "text" = pg_temp.rich_text_block("body");--> statement-breakpoint
UPDATE "meetings" SET "minutes_text" = pg_temp.rich_text_block("minutes") WHERE "minutes" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "pages" ALTER COLUMN "text" SET NOT NULL;
