// Where clicking an NPC leads: the agent watched in Canopy's inspector (its tree live, its data, why).

/** The URL that shows agent `agent` of session `session` on the Canopy service at `canopyHttp`. */
export function inspectUrl(canopyHttp: string, session: string, agent: number | string): string {
  return `${canopyHttp}/inspector/#/session/${encodeURIComponent(session)}/agent/${encodeURIComponent(String(agent))}`;
}
