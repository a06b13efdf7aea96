import pg from "pg";

/** What hears a channel: its notifications, and whether it is heard at all. */
export type ChannelListener = {
  onNotification(payload: string): void;
  /** Heard from now on; anything sent before may have been missed. */
  onListening(): void;
  /** Not heard until `onListening` again: whatever relies on the channel must not trust it. */
  onDeaf(): void;
};

export type Unlisten = () => Promise<void>;

/**
 * What a process keeps of organisations' data, forgotten when `channel` names an organisation
 * whose data changed. While the channel is not heard nothing kept may be served, and once it is
 * heard again nothing kept before is trusted.
 */
export abstract class ForgettingCache {
  /** Whether the channel is heard: only then may what is kept be served, or anything kept. */
  protected heard = false;
  /** Counts what may have made a value stale while the query that read it ran. */
  protected changes = 0;
  private unlisten: Unlisten | undefined;

  protected constructor(private readonly channel: string) {}

  /** Starts hearing the channel; until then nothing is served from memory. */
  async start(database: {
    listen(channel: string, listener: ChannelListener): Promise<Unlisten>;
  }): Promise<void> {
    this.unlisten = await database.listen(this.channel, {
      onNotification: (organizationId) => this.forgetOrganization(organizationId),
      onListening: () => {
        this.forgetAll();
        this.heard = true;
      },
      onDeaf: () => {
        this.heard = false;
        this.forgetAll();
      },
    });
  }

  async stop(): Promise<void> {
    this.heard = false;
    await this.unlisten?.();
  }

  forgetOrganization(organizationId: string): void {
    this.changes++;
    this.dropOrganization(organizationId);
  }

  private forgetAll(): void {
    this.changes++;
    this.dropAll();
  }

  protected abstract dropOrganization(organizationId: string): void;
  protected abstract dropAll(): void;
}

/**
 * The session setting under which the migrations' triggers raise, beside each notification, a
 * notice to the session that made the change (`hearWritesThrough`).
 */
const HEAR_OWN_WRITES = "workspace_service.hear_own_writes";

const FIRST_RETRY_MS = 100;
const LAST_RETRY_MS = 5_000;

/**
 * One dedicated connection per process for Postgres `LISTEN` (a pooled one would be handed to
 * queries): every channel the process listens on shares it. When it drops, every listener is
 * told it is deaf, and it reconnects with a growing delay until it is heard again.
 */
export class PostgresListener {
  private readonly channels = new Map<string, Set<ChannelListener>>();
  /** What each pooled connection heard of its own writes since it was taken from the pool. */
  private readonly ownWrites = new WeakMap<pg.ClientBase, Map<string, pg.Notification>>();
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private retryMs = FIRST_RETRY_MS;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  async listen(channel: string, listener: ChannelListener): Promise<Unlisten> {
    const listeners = this.channels.get(channel) ?? new Set();
    this.channels.set(channel, listeners);
    listeners.add(listener);
    listener.onDeaf();
    await this.connecting;
    if (this.client === undefined) {
      // Opening the connection listens on every channel, this one included.
      await this.connect();
    } else {
      await this.client.query(`LISTEN ${this.client.escapeIdentifier(channel)}`);
      listener.onListening();
    }
    return async () => {
      listeners.delete(listener);
    };
  }

  /**
   * Hears the writes made through a pool before their callers go on. On each connection,
   * prepared by `hearWritesOf` as it opens, the triggers also raise a notice naming the channel
   * (message) and the payload (detail); the notices a connection got are handed to the
   * listeners when it goes back to the pool, after its statement or transaction ended.
   */
  hearWritesThrough(pool: pg.Pool): void {
    pool.on("release", (_error, client) => {
      const notices = this.ownWrites.get(client);
      if (notices === undefined) return;
      this.ownWrites.delete(client);
      for (const notice of notices.values()) this.dispatch(notice);
    });
  }

  /** The pool's `onConnect`, for `hearWritesThrough`. */
  async hearWritesOf(client: pg.ClientBase): Promise<void> {
    client.on("notice", ({ message, detail }) => {
      if (message === undefined || !this.channels.has(message)) return;
      const notices = this.ownWrites.get(client) ?? new Map();
      // By channel and payload: a statement over many rows raises one notice per row.
      notices.set(`${message}\n${detail}`, { processId: 0, channel: message, payload: detail });
      this.ownWrites.set(client, notices);
    });
    await client.query(`set ${HEAR_OWN_WRITES} = on`);
  }

  private dispatch(message: pg.Notification): void {
    for (const listener of this.channels.get(message.channel) ?? []) {
      listener.onNotification(message.payload ?? "");
    }
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on("notification", (message) => this.dispatch(message));
    client.on("error", (error) => this.onError(error));
    client.on("end", () => this.lost(client));
    try {
      await client.connect();
      for (const channel of this.channels.keys()) {
        await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      }
    } catch (error) {
      this.onError(error);
      await client.end().catch(() => {});
      this.scheduleRetry();
      return;
    }
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    this.retryMs = FIRST_RETRY_MS;
    for (const listener of this.allListeners()) listener.onListening();
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    for (const listener of this.allListeners()) listener.onDeaf();
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    this.retry = setTimeout(() => void this.connect(), this.retryMs);
    this.retry.unref();
    this.retryMs = Math.min(this.retryMs * 2, LAST_RETRY_MS);
  }

  private *allListeners(): Iterable<ChannelListener> {
    for (const listeners of this.channels.values()) yield* listeners;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    await client?.end();
  }
}
