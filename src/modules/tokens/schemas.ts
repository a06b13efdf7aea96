import { storableText } from "../../core/values.js";

const TOKEN_NAME_MAX_LENGTH = 100;

/** A token's name, shown beside it in lists: storable text, trimmed, of a bounded length. */
export const tokenNameSchema = storableText
  .trim()
  .max(TOKEN_NAME_MAX_LENGTH, `may have at most ${TOKEN_NAME_MAX_LENGTH} characters`);
