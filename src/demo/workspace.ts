import type { WorkspaceDocumentInput } from "../import/schema.js";

// A small robotics company, enough to try every read endpoint against believable data.

export const DEMO_ORGANIZATION_SLUG = "demo";
export const DEMO_ADMIN = { email: "admin@demo.example", name: "Avery Admin" } as const;

const armOverview = `# Picker Arm v2

The second-generation picking arm for tote-to-tote transfers in narrow aisles.

## Goals

- Pick **5 kg** payloads at 600 picks per hour
- Fit the 1.2 m aisle envelope
- Reuse the v1 controller where we can
  - same CAN bus layout
  - same safety relay

## Status

1. EVT units assembled
2. Gripper redesign in review
3. DVT build scheduled for June
`;

const armArchitecture = `# Architecture

The arm has three subsystems:

- **Gripper**: vacuum cups with a fallback finger pair
- **Wrist actuator**: harmonic drive, 40:1
- **Controller board**: runs the motion planner

| Subsystem | Owner | Spec |
| --- | --- | --- |
| Gripper | Morgan | payload-capacity |
| Wrist | Riley | reach-envelope |
`;

const armSafety = `# Safety

Every change to the arm must keep these:

1. Stop within 150 ms of a light-curtain break
2. Hold the payload on power loss
   - brake engages passively
   - vacuum reservoir lasts 10 s
`;

const calibration = `# Calibration runbook

## Before you start

- Power-cycle the controller
- Clear the work cell

## Steps

1. Home every joint
2. Run \`calibrate --all\`
3. Record the offsets in the log
`;

const fleetOverview = `# Fleet Manager

Schedules picks across every robot on a site.

## Components

- Scheduler
- Telemetry ingest
`;

export const demoWorkspace: WorkspaceDocumentInput = {
  organization: { slug: DEMO_ORGANIZATION_SLUG, name: "Demo Robotics" },
  users: [
    { ...DEMO_ADMIN, role: "admin" },
    { email: "member@demo.example", name: "Morgan Member", role: "member" },
    { email: "riley@demo.example", name: "Riley Engineer", role: "member" },
  ],
  documents: [
    {
      category: "documentation",
      kind: "link",
      title: "Engineering handbook",
      description: "How we design, review and ship hardware.",
      url: "https://handbook.demo.example/engineering",
    },
    {
      category: "documentation",
      kind: "file",
      title: "Brand guidelines",
      filename: "brand-guidelines-2026.pdf",
      byteSize: 2_457_600,
      contentType: "application/pdf",
    },
    {
      category: "research",
      kind: "link",
      title: "Warehouse automation market survey",
      url: "https://research.demo.example/market-survey-2026",
    },
  ],
  meetings: [
    {
      title: "All-hands, January",
      startsAt: "2026-01-15T16:00:00Z",
      durationMinutes: 60,
      status: "completed",
      locationType: "video",
      location: "https://meet.demo.example/all-hands",
      audience: "org",
      minutesMarkdown: `## Highlights

- Picker Arm EVT passed
- Two new hires in firmware

## Actions

1. Publish the DVT plan
2. Share the hiring pipeline
`,
    },
    {
      title: "Leadership sync",
      startsAt: "2026-02-02T09:00:00+01:00",
      durationMinutes: 45,
      status: "scheduled",
      locationType: "in_person",
      location: "Board room",
      description: "Budget and hiring plan for the second half.",
      audience: "restricted",
    },
  ],
  projects: [
    {
      slug: "picker-arm",
      name: "Picker Arm v2",
      status: "active",
      visibility: "org",
      description: "Second-generation picking arm for narrow-aisle warehouses.",
      startDate: "2025-09-01",
      targetDate: "2026-09-30",
      specs: [
        {
          slug: "payload-capacity",
          name: "Payload capacity",
          kind: "performance",
          units: "kg",
          valueType: "number",
          versions: [
            {
              version: "1.0",
              status: "published",
              value: 4.5,
              publishedAt: "2025-10-01T10:00:00Z",
            },
            { version: "1.1", status: "published", value: 5, publishedAt: "2026-01-20T10:00:00Z" },
            { version: "1.2", status: "draft", value: 6 },
          ],
        },
        {
          slug: "reach-envelope",
          name: "Reach envelope",
          kind: "geometry",
          units: "mm",
          valueType: "object",
          versions: [
            {
              version: "1.0",
              status: "published",
              value: { radiusMm: 850, minHeightMm: 150, maxHeightMm: 1900 },
              publishedAt: "2025-11-12T14:30:00Z",
            },
          ],
        },
        {
          slug: "cycle-time",
          name: "Pick cycle time",
          kind: "performance",
          units: "s",
          valueType: "number",
          versions: [{ version: "0.1", status: "draft", value: 6 }],
        },
      ],
      components: [
        {
          slug: "gripper",
          name: "Vacuum gripper",
          kind: "mechanical",
          dependsOn: ["spec:payload-capacity"],
          versions: [
            { version: "A", status: "released", lifecycleStage: "evt", healthStatus: "ok" },
            { version: "B", status: "released", lifecycleStage: "dvt", healthStatus: "stale" },
          ],
        },
        {
          slug: "wrist-actuator",
          name: "Wrist actuator",
          kind: "mechanical",
          dependsOn: ["spec:payload-capacity", "spec:reach-envelope"],
          versions: [
            {
              version: "1",
              status: "released",
              lifecycleStage: "evt",
              healthStatus: "under-rated",
            },
          ],
        },
        {
          slug: "controller-board",
          name: "Controller board",
          kind: "electronics",
          dependsOn: ["component:gripper"],
          versions: [
            { version: "r3", status: "in_review", lifecycleStage: "evt", healthStatus: "blocked" },
          ],
        },
      ],
      milestones: [
        {
          name: "EVT complete",
          kind: "gate",
          status: "done",
          targetDate: "2026-01-31",
          actualDate: "2026-01-28",
          description: "Engineering validation units pass bench tests.",
        },
        { name: "DVT build", kind: "build", status: "planned", targetDate: "2026-06-15" },
        { name: "PVT and launch", kind: "gate", status: "planned", targetDate: "2026-09-30" },
      ],
      tasks: [
        {
          title: "Redesign vacuum cup mount",
          status: "in_progress",
          priority: "high",
          start_date: "2026-02-02",
          due_date: "2026-03-13",
          assignee_email: "member@demo.example",
        },
        {
          title: "Order DVT harmonic drives",
          description: "Lead time is ten weeks; order before the DVT freeze.",
          status: "blocked",
          priority: "critical",
          due_date: "2026-03-01",
          blocked_reason: "Waiting for the revised payload spec to be published.",
        },
        { title: "Write calibration runbook", status: "done", priority: "normal" },
        { title: "Evaluate second-source vacuum pumps", due_date: "2026-04-30" },
        { title: "Drop the finger-pair fallback", status: "cancelled", priority: "low" },
      ],
      pages: [
        {
          title: "Overview",
          markdown: armOverview,
          children: [
            { title: "Architecture", markdown: armArchitecture },
            { title: "Safety requirements", markdown: armSafety },
          ],
        },
        {
          title: "Runbooks",
          children: [{ title: "Calibration", markdown: calibration }],
        },
      ],
      documents: [
        {
          category: "documentation",
          kind: "file",
          title: "EVT test report",
          filename: "picker-arm-evt-report.pdf",
          byteSize: 1_048_576,
          contentType: "application/pdf",
        },
        {
          category: "research",
          kind: "link",
          title: "Vacuum gripper literature review",
          url: "https://research.demo.example/vacuum-grippers",
        },
      ],
      meetings: [
        {
          title: "Gripper design review",
          startsAt: "2026-02-10T14:00:00Z",
          durationMinutes: 50,
          status: "completed",
          locationType: "video",
          location: "https://meet.demo.example/gripper-review",
          audience: "org",
          minutesMarkdown: "- Cup mount B approved\n- Retest payload at 5 kg",
          transcript: {
            status: "ready",
            text: "Morgan: The B mount holds 5 kg without slipping.\nRiley: Then we retest at DVT.",
            notes: "Mount B approved; retest the payload at 5 kg during DVT.",
            notesSource: "ai",
          },
        },
      ],
    },
    {
      slug: "fleet-manager",
      name: "Fleet Manager",
      status: "planning",
      visibility: "org",
      description: "Site-wide scheduling for every robot.",
      startDate: "2026-03-01",
      targetDate: "2026-12-15",
      specs: [
        {
          slug: "max-robots",
          name: "Robots per site",
          valueType: "number",
          versions: [{ version: "1", status: "published", value: 120 }],
        },
      ],
      components: [
        {
          slug: "scheduler",
          name: "Pick scheduler",
          kind: "software",
          dependsOn: ["spec:max-robots"],
          versions: [
            {
              version: "0.3.0",
              status: "released",
              lifecycleStage: "prototype",
              healthStatus: "ok",
            },
          ],
        },
      ],
      milestones: [
        {
          name: "Prototype on one site",
          kind: "release",
          status: "planned",
          targetDate: "2026-07-01",
        },
      ],
      tasks: [{ title: "Define telemetry schema", priority: "high", due_date: "2026-03-31" }],
      pages: [{ title: "Overview", markdown: fleetOverview }],
      meetings: [
        {
          title: "Fleet kickoff",
          startsAt: "2026-03-02T15:00:00Z",
          durationMinutes: 30,
          status: "scheduled",
          locationType: "video",
          audience: "org",
        },
      ],
    },
    {
      slug: "charging-dock",
      name: "Charging Dock",
      status: "active",
      visibility: "org",
      startDate: "2025-11-01",
      targetDate: "2026-05-29",
      specs: [
        {
          slug: "charge-power",
          name: "Charge power",
          units: "W",
          valueType: "number",
          versions: [
            { version: "1", status: "published", value: 600, publishedAt: "2025-12-01T09:00:00Z" },
          ],
        },
      ],
      milestones: [
        { name: "Certification", kind: "compliance", status: "at_risk", targetDate: "2026-04-30" },
      ],
      tasks: [{ title: "Book EMC lab slot", status: "done", due_date: "2026-02-20" }],
    },
    {
      slug: "talon",
      name: "Project Talon",
      status: "exploration",
      visibility: "private",
      description: "Confidential: a dexterous gripper for mixed-SKU picking.",
      startDate: "2026-01-05",
      tasks: [{ title: "Shortlist tactile sensor vendors", status: "in_progress" }],
      pages: [
        { title: "Talon charter", markdown: "# Talon\n\nKept private until the board review." },
      ],
    },
  ],
};
