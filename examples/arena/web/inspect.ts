// Where clicking an NPC leads: its inspection in Canopy. One function, so switching to the
// inspector (`/inspector/#/session/<id>/agent/<agent>`) is a one-line change.

/** The URL that shows agent `agent` of session `session` on the Canopy service at `canopyHttp`. */
export function inspectUrl(canopyHttp: string, session: string, agent: number | string): string {
  return `${canopyHttp}/v1/sessions/${encodeURIComponent(session)}/agents/${encodeURIComponent(String(agent))}`;
}
