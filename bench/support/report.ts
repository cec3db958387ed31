/** One measured figure, printed as a table row and written to bench/results.json. */
export interface Figure {
  section: string;
  name: string;
  value: number;
  unit: string;
  /** Human-readable target, e.g. "<= 1.15x"; absent for figures reported without a target. */
  target?: string;
  pass?: boolean;
  detail?: string;
}

export interface BenchOptions {
  quick: boolean;
  progress: (message: string) => void;
}

export function figure(section: string, name: string, value: number, unit: string, check?: { target: string; pass: boolean }, detail?: string): Figure {
  return { section, name, value, unit, ...check, ...(detail ? { detail } : {}) };
}

export const atMost = (limit: number, suffix = '') => (value: number) => ({ target: `<= ${limit}${suffix}`, pass: value <= limit });

export function formatTable(figures: Figure[]): string {
  const rows = figures.map((f) => [
    f.section,
    f.name,
    `${formatNumber(f.value)} ${f.unit}`.trim(),
    f.target ?? '',
    f.pass === undefined ? '' : f.pass ? 'PASS' : 'MISS',
    f.detail ?? '',
  ]);
  const header = ['section', 'figure', 'value', 'target', '', 'detail'];
  const widths = header.map((_, column) => Math.max(header[column]!.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

function formatNumber(value: number): string {
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(2);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The value at the p-th percentile (nearest rank below); NaN for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
