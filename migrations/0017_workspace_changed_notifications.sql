-- Every write to what the API reads notifies the instances that keep answers, in the transaction
-- that makes it (NOTIFY is delivered on commit, and one transaction's identical notifications
-- fold into one), whichever process made it: the API, `svc` or plain SQL. The payload is the
-- organisation whose kept answers are stale.
CREATE FUNCTION notify_workspace_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed record;
  organization uuid;
BEGIN
  IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
  CASE TG_TABLE_NAME
    WHEN 'organizations' THEN
      organization := changed.id;
    WHEN 'projects', 'documents', 'meetings' THEN
      organization := changed.organization_id;
    WHEN 'specs', 'components', 'milestones', 'tasks', 'pages' THEN
      SELECT p.organization_id INTO organization FROM projects p WHERE p.id = changed.project_id;
    WHEN 'spec_versions' THEN
      SELECT p.organization_id INTO organization
      FROM specs s JOIN projects p ON p.id = s.project_id WHERE s.id = changed.spec_id;
    WHEN 'component_versions', 'component_dependencies' THEN
      SELECT p.organization_id INTO organization
      FROM components c JOIN projects p ON p.id = c.project_id WHERE c.id = changed.component_id;
    WHEN 'transcripts' THEN
      SELECT m.organization_id INTO organization FROM meetings m WHERE m.id = changed.meeting_id;
  END CASE;
  -- Not found only for a row deleted with its parent, whose own row notified already.
  IF organization IS NOT NULL THEN
    PERFORM pg_notify('workspace_changed', organization::text);
    -- The service's own connections hear it before the write returns (src/db/notifications.ts).
    IF current_setting('workspace_service.hear_own_writes', true) = 'on' THEN
      RAISE NOTICE 'workspace_changed' USING DETAIL = organization::text;
    END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
DO $$
DECLARE
  read_table text;
BEGIN
  FOREACH read_table IN ARRAY ARRAY[
    'organizations', 'projects', 'specs', 'spec_versions', 'components', 'component_versions',
    'component_dependencies', 'milestones', 'tasks', 'pages', 'documents', 'meetings',
    'transcripts'
  ] LOOP
    EXECUTE format(
      'CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %I
       FOR EACH ROW EXECUTE FUNCTION notify_workspace_changed()',
      read_table || '_workspace_changed', read_table
    );
  END LOOP;
END $$;
