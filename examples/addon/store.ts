import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";

/** What the developer registered once: the OAuth client and the webhook pointing at us. */
export type Registration = {
  serviceUrl: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  webhookId: string;
  webhookUrl: string;
  webhookSecret: string;
};

/** What the connecting admin's approval gave us. */
export type StoredToken = {
  serviceUrl: string;
  clientId: string;
  accessToken: string;
  scope: string;
  obtainedAt: string;
};

/**
 * The addon's memory between runs: two JSON files in one directory, readable only by their
 * owner, because both hold secrets.
 */
export class AddonStore {
  readonly tokenFile: string;
  private readonly registrationFile: string;

  constructor(readonly directory: string) {
    this.tokenFile = path.join(directory, "token.json");
    this.registrationFile = path.join(directory, "registration.json");
  }

  loadRegistration(): Promise<Registration | null> {
    return this.read<Registration>(this.registrationFile);
  }

  saveRegistration(registration: Registration): Promise<void> {
    return this.write(this.registrationFile, registration);
  }

  loadToken(): Promise<StoredToken | null> {
    return this.read<StoredToken>(this.tokenFile);
  }

  saveToken(token: StoredToken): Promise<void> {
    return this.write(this.tokenFile, token);
  }

  private async read<T>(file: string): Promise<T | null> {
    try {
      return JSON.parse(await readFile(file, "utf8")) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  private async write(file: string, value: unknown): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    // Write then rename, so a crash never leaves half a file behind.
    const partial = `${file}.partial`;
    await writeFile(partial, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    await rename(partial, file);
  }
}
