import type { InspectorEvent } from "@dpas/host";

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
                <span className="muted"> {new Date(e.at).toLocaleTimeString()}</span>
              </summary>
              {e.data !== undefined && <pre className="json">{JSON.stringify(e.data, null, 2)}</pre>}
            </details>
          </li>
        ))}
      </ol>
    </section>
  );
}
