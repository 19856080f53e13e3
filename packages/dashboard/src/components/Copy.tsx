import { useState } from 'react';

/** A value with a button that copies it to the clipboard. */
export function Copy({ value, label }: { value: string; label: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <span className="copy">
      <code>{value}</code>{' '}
      <button
        type="button"
        className="secondary small"
        aria-label={`Copy ${label}`}
        onClick={() =>
          navigator.clipboard.writeText(value).then(
            () => setDone('Copied'),
            () => setDone('Copy failed'),
          )
        }
      >
        {done ?? 'Copy'}
      </button>
    </span>
  );
}
