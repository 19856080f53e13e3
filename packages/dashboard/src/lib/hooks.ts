import { useEffect, useState } from 'react';

/** The time now, updated every `ms`: for countdowns. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** How often lists poll the API (there is no change stream of sandboxes to subscribe to). */
export const POLL_MS = 2000;
