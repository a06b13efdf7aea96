/**
 * The bare twin: a plain Fastify server on a pg pool of the service's size, answering the
 * bench's URLs with the same JSON bytes, each from one SQL query (the write: one transaction
 * with the same two INSERTs), with no auth, no rate limit and no validation. It is the stack's
 * own limit on this machine, measured in the same run as the service.
 *
 * Environment: DATABASE_URL, PORT, ORGANIZATION (slug), AUTHOR (email), TOKEN (for /me).
 */
import { createHash } from "node:crypto";
import Fastify from "fastify";
import pg from "pg";
import { richTextToPlainText } from "../src/richtext/plain-text.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

// Dates as the API prints them (YYYY-MM-DD), not as midnight Date objects.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

const pool = new pg.Pool({ connectionString: env("DATABASE_URL"), max: 10 });
const tokenHash = createHash("sha256").update(env("TOKEN")).digest("hex");
const ids = await pool.query<{ organization_id: string; author_id: string }>(
  `select o.id as organization_id, u.id as author_id
   from organizations o, users u where o.slug = $1 and lower(u.email) = lower($2)`,
  [env("ORGANIZATION"), env("AUTHOR")],
);
const { organization_id: organizationId, author_id: authorId } = ids.rows[0] ?? {};
if (organizationId === undefined || authorId === undefined) throw new Error("no bench fixture");

const iso = (value: Date | null) => (value === null ? null : value.toISOString());
const ok = (data: unknown) => JSON.stringify({ ok: true, data });
const app = Fastify({ logger: false });

app.get("/api/v1/me", async (_request, reply) => {
  const { rows } = await pool.query(
    `select o.id, o.slug, o.name, t.scopes from api_tokens t
     join organizations o on o.id = t.organization_id where t.token_hash = $1`,
    [tokenHash],
  );
  const row = rows[0];
  return reply.type("application/json; charset=utf-8").send(
    ok({
      organization: { id: row.id, slug: row.slug, name: row.name },
      scopes: row.scopes,
      pluginId: null,
    }),
  );
});

app.get("/api/v1/projects", async (_request, reply) => {
  const { rows } = await pool.query(
    `select slug, name, status, visibility, description, start_date, target_date from projects
     where organization_id = $1 and visibility = 'org' order by name, slug`,
    [organizationId],
  );
  const data = rows.map((row) => ({
    slug: row.slug,
    name: row.name,
    status: row.status,
    visibility: row.visibility,
    description: row.description,
    startDate: row.start_date,
    targetDate: row.target_date,
  }));
  return reply.type("application/json; charset=utf-8").send(ok(data));
});

app.get<{ Params: { slug: string } }>("/api/v1/projects/:slug/tasks", async (request, reply) => {
  const { rows } = await pool.query(
    `select t.title, t.status, t.priority, t.due_date, t.description from tasks t
     join projects p on p.id = t.project_id
     where p.organization_id = $1 and p.slug = $2 and p.visibility = 'org' order by t.sequence`,
    [organizationId, request.params.slug],
  );
  const data = rows.map((row) => ({
    title: row.title,
    status: row.status,
    priority: row.priority,
    targetDate: row.due_date,
    description: row.description,
  }));
  return reply.type("application/json; charset=utf-8").send(ok(data));
});

app.get<{ Params: { id: string } }>("/api/v1/pages/:id", async (request, reply) => {
  const { rows } = await pool.query(
    `select p.id, p.parent_id, p.title, p.body, p.updated_at, p.updated_by from pages p
     join projects pr on pr.id = p.project_id
     where p.id = $1 and pr.organization_id = $2 and pr.visibility = 'org'`,
    [request.params.id, organizationId],
  );
  const row = rows[0];
  return reply.type("application/json; charset=utf-8").send(
    ok({
      id: row.id,
      parentId: row.parent_id,
      title: row.title,
      text: richTextToPlainText(row.body),
      updatedAt: iso(row.updated_at),
      updatedBy: row.updated_by,
    }),
  );
});

app.get<{ Params: { id: string } }>("/api/v1/meetings/:id/transcript", async (request, reply) => {
  const { rows } = await pool.query(
    `select t.status, substr(t.text, 1, 200000) as text, char_length(t.text) > 200000 as truncated
     from meetings m join transcripts t on t.meeting_id = m.id
     where m.id = $1 and m.organization_id = $2 and m.audience = 'org'`,
    [request.params.id, organizationId],
  );
  const row = rows[0];
  return reply
    .type("application/json; charset=utf-8")
    .send(ok({ status: row.status, text: row.text, truncated: row.truncated }));
});

app.post<{ Params: { slug: string }; Body: { title: string } }>(
  "/api/v1/projects/:slug/tasks",
  async (request, reply) => {
    const client = await pool.connect();
    try {
      await client.query("begin");
      const task = await client.query(
        `insert into tasks (project_id, title, status, priority, created_by, updated_by)
         select p.id, $3, 'not_started', 'normal', $4, $4 from projects p
         where p.organization_id = $1 and p.slug = $2 and p.visibility = 'org'
         returning id, title, description, status, priority, start_date, due_date,
           blocked_reason, assigned_to`,
        [organizationId, request.params.slug, request.body.title, authorId],
      );
      const { id, ...after } = task.rows[0];
      await client.query(
        `insert into change_events (organization_id, type, action, target_kind, target_id, actor_id, diff)
         values ($1, 'task.created', 'created', 'task', $2, $3, $4)`,
        [organizationId, id, authorId, { before: {}, after }],
      );
      await client.query("commit");
      return reply.type("application/json; charset=utf-8").send(ok({ id }));
    } catch (error) {
      await client.query("rollback");
      throw error;
    } finally {
      client.release();
    }
  },
);

await app.listen({ port: Number(env("PORT")), host: "127.0.0.1" });
