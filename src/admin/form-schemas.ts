import { z } from "zod";
import { id } from "../core/values.js";

/** Every address of the admin area names its organisation by slug. */
export const organizationParams = z.object({ org: z.string() });

/** An address naming one record of the organisation by id; any other id names nothing (404). */
export const recordParams = organizationParams.extend({ id });

/** A single-valued form field, "" when left out; sent twice, it arrives as a list and is refused. */
export const formText = z.string({ error: "must be sent once" }).default("");

/** Checkboxes: none arrives as nothing, one as a string, several as a list. */
export const checkboxList = z
  .union([z.string().transform((value) => (value === "" ? [] : [value])), z.array(z.string())], {
    error: "must be a list of values",
  })
  .default([]);
