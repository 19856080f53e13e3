/** The guest agent is bundled into one file (dist/agent.js) and started inside each sandbox. */
export const GUEST_AGENT_ENTRY = new URL('./main.ts', import.meta.url).pathname;
