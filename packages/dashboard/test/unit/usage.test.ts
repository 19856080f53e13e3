import assert from 'node:assert/strict';
import { test } from 'node:test';
import { archiveStatus, localToIso } from '../../src/lib/databases';
import { formatFigure, groupBy, rangeOf, sampleSeries, shares } from '../../src/lib/usage';

test('a range ends now and starts its length before', () => {
  const now = Date.parse('2026-12-03T12:00:00.000Z');
  assert.deepEqual(rangeOf('1h', now), {
    from: '2026-12-03T11:00:00.000Z',
    to: '2026-12-03T12:00:00.000Z',
  });
  assert.equal(rangeOf('7d', now).from, '2026-11-26T12:00:00.000Z');
});

test('samples become chart columns: seconds, percent, MiB, and network per second', () => {
  const s = sampleSeries([
    {
      at: '2026-12-03T12:00:05.000Z',
      cpu_seconds: 2.5,
      cpu_percent: 50,
      memory_gb_seconds: 0.31,
      memory_bytes: 64 * 1024 * 1024,
      disk_bytes: null,
      net_rx_bytes: 1024,
      net_tx_bytes: 4096,
      interval_seconds: 5,
    },
    {
      at: '2026-12-03T12:00:10.000Z',
      cpu_seconds: 0,
      cpu_percent: 0,
      memory_gb_seconds: 0,
      memory_bytes: 0,
      disk_bytes: 2 * 1024 * 1024,
      net_rx_bytes: 0,
      net_tx_bytes: 0,
      interval_seconds: 0,
    },
  ]);
  assert.deepEqual(s.times, [
    Date.parse('2026-12-03T12:00:05Z') / 1000,
    Date.parse('2026-12-03T12:00:10Z') / 1000,
  ]);
  assert.deepEqual(s.cpuPercent, [50, 0]);
  assert.deepEqual(s.memoryMiB, [64, 0]);
  assert.deepEqual(s.diskMiB, [null, 2]);
  assert.deepEqual(s.netKiBps, [1, 0]);
});

test('shares are percentages of the largest, and zero when nothing was used', () => {
  assert.deepEqual(shares([10, 5, 0]), [100, 50, 0]);
  assert.deepEqual(shares([0, 0]), [0, 0]);
  assert.deepEqual(shares([]), []);
});

test('group_by comes from the form; a label needs a key without spaces', () => {
  assert.equal(groupBy('template', 'x'), 'template');
  assert.equal(groupBy('label', ' team '), 'label:team');
  assert.equal(groupBy('label', ''), null);
  assert.equal(groupBy('label', 'a b'), null);
  assert.equal(formatFigure(812.44, 's'), '812 s');
  assert.equal(formatFigure(1.256, 'GiB·s'), '1.26 GiB·s');
});

test('archive status: lagging past a minute, nothing yet, and not running', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');
  const archive = {
    last_archived_wal: '000000010000000000000003',
    last_archived_at: '2026-12-03T11:59:30Z',
  };
  assert.deepEqual(archiveStatus({ state: 'ready', archive_lag_seconds: 0, archive }, now), {
    text: 'last WAL 30s ago; nothing waiting',
    tone: 'ok',
  });
  assert.equal(
    archiveStatus({ state: 'ready', archive_lag_seconds: 125, archive }, now).tone,
    'lagging',
  );
  assert.match(
    archiveStatus({ state: 'ready', archive_lag_seconds: 125, archive }, now).text,
    /waiting 2m 05s/,
  );
  const none = { last_archived_wal: null, last_archived_at: null };
  assert.equal(
    archiveStatus({ state: 'ready', archive_lag_seconds: 0, archive: none }, now).tone,
    'none',
  );
  assert.deepEqual(
    archiveStatus({ state: 'hibernated', archive_lag_seconds: null, archive }, now),
    {
      text: 'last WAL 30s ago (hibernated)',
      tone: 'idle',
    },
  );
});

test('a datetime-local value is read as local time; empty or bad is none', () => {
  assert.equal(localToIso(''), '');
  assert.equal(localToIso('not a time'), '');
  assert.equal(localToIso('2026-12-03T12:00:00'), new Date(2026, 11, 3, 12, 0, 0).toISOString());
});
