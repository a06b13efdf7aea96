-- Wakes the webhook relay when change events commit (NOTIFY is delivered on commit, and one
-- transaction's identical notifications are folded into one), whichever process wrote them.
-- The relay's poll stays as the safety net for a notification nobody heard.
CREATE FUNCTION notify_change_events_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('change_events_recorded', '');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER change_events_recorded
  AFTER INSERT ON change_events
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change_events_recorded();
