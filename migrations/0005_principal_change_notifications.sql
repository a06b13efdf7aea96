-- Every change that can end or narrow what a bearer token may do notifies the instances that
-- cache principals, in the transaction that makes it (NOTIFY is delivered on commit), whichever
-- process made it: the API, the admin area, `svc` or plain SQL. The payload is the
-- organisation whose cached principals are stale.
CREATE FUNCTION notify_principals_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(
    'principals_changed',
    CASE WHEN TG_OP = 'DELETE' THEN OLD.organization_id ELSE NEW.organization_id END::text
  );
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION notify_organization_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('principals_changed', OLD.id::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Only the columns a principal is made of: the once-a-minute last-use stamp notifies nobody.
CREATE TRIGGER api_tokens_principals_changed
  AFTER UPDATE OF revoked_at, expires_at, scopes, user_id, organization_id, grant_id OR DELETE
  ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION notify_principals_changed();
--> statement-breakpoint
CREATE TRIGGER memberships_principals_changed
  AFTER UPDATE OF removed_at, active_since, user_id, organization_id OR DELETE ON memberships
  FOR EACH ROW EXECUTE FUNCTION notify_principals_changed();
--> statement-breakpoint
CREATE TRIGGER oauth_grants_principals_changed
  AFTER UPDATE OF revoked_at, client_id, organization_id OR DELETE ON oauth_grants
  FOR EACH ROW EXECUTE FUNCTION notify_principals_changed();
--> statement-breakpoint
CREATE TRIGGER organizations_principals_changed
  AFTER UPDATE OF name, slug OR DELETE ON organizations
  FOR EACH ROW EXECUTE FUNCTION notify_organization_changed();
