import { randomBytes } from "node:crypto";
import argon2 from "argon2";
import { z } from "zod";

// Long enough that a browser password is not trivially guessable; argon2 itself takes any length.
const MIN_PASSWORD_LENGTH = 8;
export const passwordSchema = z.string().min(MIN_PASSWORD_LENGTH);

/**
 * OWASP's first argon2id configuration (19 MiB, 2 passes, 1 lane): as strong against guessing as
 * the library's default, at a seventh of its CPU per sign-in. Older hashes carry their own.
 */
const HASH_OPTIONS = {
  type: argon2.argon2id,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, HASH_OPTIONS);
}

export function verifyPassword(hash: string, password: string): Promise<boolean> {
  return argon2.verify(hash, password);
}

/** A password shown once to a new admin: 12 random bytes are 16 base64url characters. */
export function generatePassword(): string {
  return randomBytes(12).toString("base64url");
}
