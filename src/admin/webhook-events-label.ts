import { changeEventCatalogue } from "../modules/change-events/catalogue.js";

/**
 * How the admin pages name a webhook's event types. `all` is stored as the catalogue's types at
 * registration, so a webhook holding every one of them is shown as "All events".
 */
export function webhookEventsLabel(events: readonly string[]): string {
  const subscribed = new Set(events);
  const coversAll = changeEventCatalogue.every((entry) => subscribed.has(entry.type));
  return coversAll ? "All events" : events.join(", ");
}
