/**
 * The stack's limit, measured in the same run as the service: a bare Fastify server on a pg pool
 * of the service's size, with no auth, rate limit or validation.
 * - A read answers its URL with the finished JSON from one lookup on a primary key: at start the
 *   twin asks the service once for each of READ_PATHS and stores the bytes in a table keyed by
 *   path.
 * - The write runs the service's two INSERTs (the task and its change event) in one transaction.
 *
 * Environment: DATABASE_URL, PORT, ORGANIZATION (slug), AUTHOR (email), SERVICE_URL, TOKEN (the
 * service's, for taking its answers), READ_PATHS (a JSON array).
 */
import Fastify from "fastify";
import pg from "pg";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

const pool = new pg.Pool({ connectionString: env("DATABASE_URL"), max: 10 });
const ids = await pool.query<{ organization_id: string; author_id: string }>(
  `select o.id as organization_id, u.id as author_id
   from organizations o, users u where o.slug = $1 and lower(u.email) = lower($2)`,
  [env("ORGANIZATION"), env("AUTHOR")],
);
const { organization_id: organizationId, author_id: authorId } = ids.rows[0] ?? {};
if (organizationId === undefined || authorId === undefined) throw new Error("no bench fixture");

await pool.query(
  "create table if not exists bench_limit_answers (path text primary key, body text not null)",
);
for (const path of JSON.parse(env("READ_PATHS")) as string[]) {
  const answer = await fetch(`${env("SERVICE_URL")}${path}`, {
    headers: { authorization: `Bearer ${env("TOKEN")}` },
  });
  const body = await answer.text();
  if (answer.status !== 200) throw new Error(`GET ${path}: ${answer.status} ${body.slice(0, 300)}`);
  await pool.query(
    `insert into bench_limit_answers (path, body) values ($1, $2)
     on conflict (path) do update set body = excluded.body`,
    [path, body],
  );
}

const ok = (data: unknown) => JSON.stringify({ ok: true, data });
const app = Fastify({ logger: false });

app.get("*", async (request, reply) => {
  const { rows } = await pool.query<{ body: string }>({
    name: "limit_answer",
    text: "select body from bench_limit_answers where path = $1",
    values: [request.url],
  });
  const row = rows[0];
  if (row === undefined) return reply.code(404).send();
  return reply.type("application/json; charset=utf-8").send(row.body);
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
