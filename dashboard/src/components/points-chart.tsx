import { BarChart } from 'chartist';
import 'chartist/dist/index.css';
import { useEffect, useRef } from 'preact/hooks';
import { formatNumber } from '../format.js';

export interface DayFigures {
  date: string;
  issued: number;
  redeemed: number;
  expired: number;
}

const SERIES = [
  { key: 'issued', label: 'Issued' },
  { key: 'redeemed', label: 'Redeemed' },
  { key: 'expired', label: 'Expired' },
] as const;

/**
 * Points issued, redeemed and expired per day, as bars (Chartist draws SVG: each bar carries its
 * value in `ct:value`). The same figures are in a table below it for screen readers and copying.
 */
export function PointsChart({ days }: { days: DayFigures[] }) {
  const chart = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!chart.current) return;
    // On a phone a day is ~10 px wide: thinner bars closer together, and fewer date labels.
    const narrow = chart.current.clientWidth < 560;
    const every = Math.ceil(days.length / (narrow ? 5 : 8));
    const drawn = new BarChart(
      chart.current,
      {
        labels: days.map((d) => d.date.slice(5)),
        series: SERIES.map((s) => ({ name: s.key, className: `series-${s.key}`, data: days.map((d) => d[s.key]) })),
      },
      {
        height: 260,
        seriesBarDistance: narrow ? 3 : 6,
        axisX: { showGrid: false, labelInterpolationFnc: (value: unknown, index: number) => (index % every === 0 ? String(value) : null) },
        axisY: { onlyInteger: true, labelInterpolationFnc: (value: unknown) => formatNumber(Number(value)) },
        chartPadding: { top: 10, right: 10, bottom: 0, left: narrow ? 8 : 20 },
      },
    );
    return () => drawn.detach();
  }, [days]);

  const total = (key: (typeof SERIES)[number]['key']) => days.reduce((sum, d) => sum + d[key], 0);
  return (
    <figure class="chart" aria-labelledby="points-chart-title">
      <figcaption id="points-chart-title">
        Points per day{' '}
        <span class="muted small nowrap">
          {days[0]?.date} to {days.at(-1)?.date} (UTC)
        </span>
      </figcaption>
      <ul class="legend" aria-hidden="true">
        {SERIES.map((s) => (
          <li key={s.key} class={`legend-${s.key}`}>
            {s.label} <strong>{formatNumber(total(s.key))}</strong>
          </li>
        ))}
      </ul>
      <div ref={chart} class="chart-area" data-testid="points-chart" />
      <details>
        <summary>Show the figures as a table</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Day</th>
              {SERIES.map((s) => (
                <th scope="col" class="num" key={s.key}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.date}>
                <th scope="row">{d.date}</th>
                {SERIES.map((s) => (
                  <td class="num" key={s.key}>
                    {formatNumber(d[s.key])}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
