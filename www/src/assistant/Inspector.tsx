import type { InspectorEvent } from "@dpas/host";

/** `at` is a `performance.now()` stamp (ms since page load); an epoch stamp also works. */
function clock(at: number): string {
  const epoch = at < 1e12 ? performance.timeOrigin + at : at;
  return new Date(epoch).toLocaleTimeString();
}

export function Inspector({ events }: { events: InspectorEvent[] }) {
  return (
    <section className="inspector" aria-label="Inspector">
      <h2>Inspector</h2>
      {events.length === 0 && <p className="muted">No events yet. Send a message to watch a turn.</p>}
      <ol>
        {events.map((e, i) => (
          <li key={i}>
            <details>
              <summary>
                <span className={`lane lane-${e.lane}`}>{e.lane}</span> <code>{e.eventType}</code> {e.summary}
                <span className="muted"> {clock(e.at)}</span>
              </summary>
              {e.data !== undefined && <pre className="json">{JSON.stringify(e.data, null, 2)}</pre>}
            </details>
          </li>
        ))}
      </ol>
    </section>
  );
}
