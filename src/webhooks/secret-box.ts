import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

// Signing secrets must be readable again to sign deliveries, so they are encrypted (not
// hashed) under a key derived from SECRET_KEY for this one purpose.
const VERSION = "v1";

function keyFrom(secretKey: string): Buffer {
  return Buffer.from(
    hkdfSync("sha256", secretKey, "workspace-service", "webhook-signing-secret", 32),
  );
}

export function encryptSecret(secretKey: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyFrom(secretKey), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === "string" ? part : part.toString("base64url")))
    .join(".");
}

export function decryptSecret(secretKey: string, sealed: string): string {
  const [version, iv, tag, ciphertext] = sealed.split(".");
  if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined) {
    throw new Error("unrecognised sealed secret");
  }
  const decipher = createDecipheriv(
    "aes-256-gcm",
    keyFrom(secretKey),
    Buffer.from(iv, "base64url"),
  );
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([
    decipher.update(Buffer.from(ciphertext, "base64url")),
    decipher.final(),
  ]).toString("utf8");
}

/** `whsec_` and 32 random bytes. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}
