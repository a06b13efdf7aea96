ALTER TABLE "webhooks" ADD COLUMN "circuit_open_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "circuit_cooldown_seconds" integer;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "circuit_failures" integer;