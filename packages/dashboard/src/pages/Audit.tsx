/** The audit log with its filters (GET /v1/audit), paged with next_before. */
import { useState } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { api, query } from '../lib/api';
import type { AuditEvent, Page } from '../lib/types';
import { ErrorBox, Loading } from '../components/ErrorBox';

const FIELDS = ['actor', 'resource_id', 'action', 'error_code'] as const;

export function AuditPage() {
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [draft, setDraft] = useState<Record<string, string>>({});
  const list = useInfiniteQuery({
    queryKey: ['audit', filters],
    initialPageParam: null as number | string | null,
    queryFn: ({ pageParam }) =>
      api<Page<AuditEvent>>(`/v1/audit${query({ ...filters, limit: 100, before: pageParam })}`),
    getNextPageParam: (last) => last.next_before ?? null,
    refetchInterval: 5000,
  });
  const rows = list.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <form
        className="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(Object.fromEntries(Object.entries(draft).filter(([, v]) => v.trim())));
        }}
      >
        {FIELDS.map((f) => (
          <label key={f}>
            {f.replace('_', ' ')}
            <input
              value={draft[f] ?? ''}
              onChange={(e) => setDraft({ ...draft, [f]: e.target.value })}
              placeholder={f === 'action' ? 'DELETE /v1/sandboxes*' : ''}
            />
          </label>
        ))}
        <label>
          result
          <select
            value={draft.result ?? ''}
            onChange={(e) => setDraft({ ...draft, result: e.target.value })}
          >
            <option value="">any</option>
            <option value="success">success</option>
            <option value="failure">failure</option>
          </select>
        </label>
        <button type="submit">Apply filters</button>
      </form>
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading what="the audit log" />
      ) : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Time</th>
                <th>Actor</th>
                <th>Action</th>
                <th>Resource</th>
                <th>Status</th>
                <th>Request</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id} className={e.status >= 400 ? 'failed' : ''}>
                  <td>{new Date(e.at).toLocaleString()}</td>
                  <td>{e.actor}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>{e.resource_id}</td>
                  <td>
                    {e.status} {e.error_code}
                  </td>
                  <td className="small">{e.request_id}</td>
                </tr>
              ))}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={6} className="muted">
                    No events match.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      {list.hasNextPage && (
        <button
          type="button"
          className="secondary"
          onClick={() => void list.fetchNextPage()}
          disabled={list.isFetchingNextPage}
        >
          Older events
        </button>
      )}
    </section>
  );
}
