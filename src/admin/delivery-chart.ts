import type { ActivityBucket, ActivitySummary } from "../webhooks/delivery-log.js";

/**
 * The geometry of a small stacked bar chart, drawn by the template as inline SVG. Everything is
 * an attribute (x, y, width, height, class): the pages' CSP allows no inline style.
 */
type ChartBar = {
  bucket: ActivityBucket;
  x: number;
  width: number;
  /** Bottom to top: delivered, failed, pending; zero-height segments are left out. */
  segments: { kind: "delivered" | "failed" | "pending"; y: number; height: number }[];
  label: string;
  /** The tick under the bar, or null when this bar has none. */
  tick: string | null;
};

export type Chart = {
  width: number;
  height: number;
  plotHeight: number;
  bars: ChartBar[];
  summary: ActivitySummary;
  description: string;
};

const WIDTH = 480;
const PLOT_HEIGHT = 100;
const TICK_SPACE = 16;

function hourLabel(start: Date): string {
  return `${start.toISOString().slice(11, 16)} UTC`;
}

function dayLabel(start: Date): string {
  return start.toISOString().slice(0, 10);
}

function describeBucket(label: string, bucket: ActivityBucket): string {
  const noun = bucket.total === 1 ? "delivery" : "deliveries";
  return `${label}: ${bucket.total} ${noun}, ${bucket.delivered} delivered, ${bucket.failed} failed, ${bucket.pending} pending`;
}

/** Percent with no decimals, or a dash when nothing settled yet. */
export function formatRate(rate: number | null): string {
  return rate === null ? "–" : `${Math.round(rate * 1000) / 10}%`;
}

export function buildChart(summary: ActivitySummary, unit: "hour" | "day"): Chart {
  const count = summary.buckets.length;
  const slot = WIDTH / count;
  const barWidth = Math.max(2, Math.round(slot * 0.72 * 10) / 10);
  const highest = Math.max(1, ...summary.buckets.map((bucket) => bucket.total));
  const scale = (value: number) => Math.round((value / highest) * PLOT_HEIGHT * 10) / 10;
  const bars = summary.buckets.map((bucket, index) => {
    let top = PLOT_HEIGHT;
    const segments: ChartBar["segments"] = [];
    for (const kind of ["delivered", "failed", "pending"] as const) {
      const height = scale(bucket[kind]);
      if (bucket[kind] === 0) continue;
      // A single delivery among thousands still shows as a sliver.
      const drawn = Math.max(height, 1);
      top -= drawn;
      segments.push({ kind, y: Math.round(top * 10) / 10, height: drawn });
    }
    const label = unit === "hour" ? hourLabel(bucket.start) : dayLabel(bucket.start);
    const tickEvery = unit === "hour" ? 6 : 1;
    const tick =
      index % tickEvery === 0
        ? unit === "hour"
          ? bucket.start.toISOString().slice(11, 16)
          : bucket.start.toISOString().slice(5, 10)
        : null;
    return {
      bucket,
      x: Math.round((index * slot + (slot - barWidth) / 2) * 10) / 10,
      width: barWidth,
      segments,
      label: describeBucket(label, bucket),
      tick,
    };
  });
  const period = unit === "hour" ? "the last 24 hours, by the hour" : "the last 7 days, by the day";
  return {
    width: WIDTH,
    height: PLOT_HEIGHT + TICK_SPACE,
    plotHeight: PLOT_HEIGHT,
    bars,
    summary,
    description: `Deliveries in ${period}: ${summary.total} in all, ${summary.delivered} delivered, ${summary.failed} failed, ${summary.pending} pending.`,
  };
}
