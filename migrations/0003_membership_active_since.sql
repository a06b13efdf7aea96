ALTER TABLE "memberships" ADD COLUMN "active_since" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
UPDATE "memberships" SET "active_since" = "created_at" WHERE "removed_at" IS NULL;
