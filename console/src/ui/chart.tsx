import { useEffect, useId, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatHour } from '../format';

/**
 * The series' colours: the theme's custom properties in styles.css (each readable on white), the one
 * place their values are kept. A canvas takes no var(): they are read when a chart is drawn.
 */
const COLOUR_PROPERTIES = { success: '--success', warning: '--warning', danger: '--danger', accent: '--accent', violet: '--violet' } as const;
type ChartColour = keyof typeof COLOUR_PROPERTIES;
const cssColour = (colour: ChartColour) => getComputedStyle(document.documentElement).getPropertyValue(COLOUR_PROPERTIES[colour]).trim();

export interface ChartSeries {
  label: string;
  colour: ChartColour;
  values: (number | null)[];
}

interface ChartProps {
  title: string;
  /** What the figures count, for the axis and the table ("attempts", "ms"). */
  unit: string;
  /** Milliseconds since the epoch, one per value. */
  times: number[];
  series: ChartSeries[];
}

/**
 * A line chart over hours (uPlot, drawn on a canvas), with the same figures as a table for screen
 * readers and for reading exact values.
 */
export function Chart({ title, unit, times, series }: ChartProps) {
  const container = useRef<HTMLDivElement>(null);
  const titleId = useId();
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 280),
      height: 220,
      scales: { x: { time: true } },
      series: [{}, ...series.map(({ label, colour }) => ({ label, stroke: cssColour(colour), width: 2, points: { show: times.length <= 48 } }))],
      axes: [{}, { label: unit, size: 60 }],
      legend: { live: false },
    };
    const plot = new uPlot(options, [times.map((ms) => ms / 1000), ...series.map(({ values }) => values)], element);
    const resized = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 280), height: 220 }));
    resized.observe(element);
    return () => {
      resized.disconnect();
      plot.destroy();
    };
  }, [times, series, unit]);
  return (
    <figure class="chart" aria-labelledby={titleId}>
      <figcaption id={titleId}>{title}</figcaption>
      <div ref={container} class="chart-canvas" aria-hidden="true" />
      <details>
        <summary>{title}: the figures as a table</summary>
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Hour</th>
                {series.map(({ label }) => (
                  <th scope="col" key={label}>
                    {label} ({unit})
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {times.map((time, index) => (
                <tr key={time}>
                  <th scope="row">{formatHour(time)}</th>
                  {series.map(({ label, values }) => (
                    <td key={label}>{values[index] ?? '—'}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
