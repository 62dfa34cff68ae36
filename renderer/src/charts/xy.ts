/** One named line (or bar set) of an XYChart: x values and bytes. */
export interface XYSeries {
  label: string;
  points: { x: number | string; y: number | null }[];
  dashed?: boolean;
  /** Marks points that ran out of memory. */
  oom?: boolean[];
}
