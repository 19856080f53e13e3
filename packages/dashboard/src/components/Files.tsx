/** The file browser: list, upload (drop or file input), download, rename, delete, preview. */
import { useEffect, useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, call, query } from '../lib/api';
import { formatBytes, joinPath, parentDir, previewKind } from '../lib/format';
import type { FileInfo } from '../lib/types';
import { ErrorBox, Loading } from './ErrorBox';

const filePath = (id: string, path: string) => `/v1/sandboxes/${id}/files${query({ path })}`;

export function Files({ sandboxId }: { sandboxId: string }) {
  const [dir, setDir] = useState('/root');
  const [dirInput, setDirInput] = useState('/root');
  const [dragging, setDragging] = useState(false);
  const [preview, setPreview] = useState<FileInfo | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const qc = useQueryClient();
  const key = ['files', sandboxId, dir];
  const list = useQuery({
    queryKey: key,
    queryFn: () =>
      api<{ items: FileInfo[] }>(`/v1/sandboxes/${sandboxId}/files/list${query({ path: dir })}`),
    refetchInterval: 5000,
  });
  const refresh = () => void qc.invalidateQueries({ queryKey: ['files', sandboxId] });
  const upload = useMutation({
    mutationFn: async (files: File[]) => {
      for (const f of files)
        await call(filePath(sandboxId, joinPath(dir, f.name)), { method: 'PUT', body: f });
    },
    onSettled: refresh,
  });
  const op = useMutation({
    mutationFn: async (o: { kind: 'delete' | 'rename' | 'mkdir'; path: string; to?: string }) => {
      if (o.kind === 'delete')
        await call(`/v1/sandboxes/${sandboxId}/files${query({ path: o.path, recursive: true })}`, {
          method: 'DELETE',
        });
      if (o.kind === 'rename')
        await api(`/v1/sandboxes/${sandboxId}/files/rename`, {
          method: 'POST',
          json: { from: o.path, to: o.to },
        });
      if (o.kind === 'mkdir')
        await api(`/v1/sandboxes/${sandboxId}/files/mkdir`, {
          method: 'POST',
          json: { path: o.path },
        });
    },
    onSettled: refresh,
  });
  const download = useMutation({
    mutationFn: async (f: FileInfo) => {
      const blob = await (await call(filePath(sandboxId, f.path))).blob();
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = f.name;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    },
  });
  const go = (d: string) => {
    setDir(d);
    setDirInput(d);
    setPreview(null);
  };
  return (
    <div
      className={`files ${dragging ? 'dragging' : ''}`}
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(e) => {
        e.preventDefault();
        setDragging(false);
        const files = [...e.dataTransfer.files];
        if (files.length) upload.mutate(files);
      }}
    >
      <form
        className="path-bar"
        onSubmit={(e) => {
          e.preventDefault();
          go(dirInput.trim() || '/');
        }}
      >
        <button
          type="button"
          className="secondary"
          onClick={() => go(parentDir(dir))}
          disabled={dir === '/'}
        >
          Up
        </button>
        <label className="grow">
          <span className="sr-only">Directory</span>
          <input
            value={dirInput}
            onChange={(e) => setDirInput(e.target.value)}
            aria-label="Directory"
          />
        </label>
        <button type="submit" className="secondary">
          Open
        </button>
        <button
          type="button"
          className="secondary"
          onClick={() => {
            const name = prompt('New folder name');
            if (name) op.mutate({ kind: 'mkdir', path: joinPath(dir, name) });
          }}
        >
          New folder
        </button>
        <label className="button">
          Upload files
          <input
            ref={input}
            type="file"
            multiple
            className="sr-only"
            aria-label="Upload files"
            onChange={(e) => {
              const files = [...(e.target.files ?? [])];
              if (files.length) upload.mutate(files);
              e.target.value = '';
            }}
          />
        </label>
      </form>
      <p className="muted small">Drop files here to upload them into {dir}.</p>
      {upload.isPending && <p aria-live="polite">Uploading…</p>}
      <ErrorBox error={upload.error} title="Upload" />
      <ErrorBox error={op.error} title="File operation" />
      <ErrorBox error={download.error} title="Download" />
      <ErrorBox error={list.error} />
      {list.isPending ? (
        <Loading what="files" />
      ) : (
        <div className="table-wrap">
          <table className="file-list">
            <thead>
              <tr>
                <th>Name</th>
                <th>Size</th>
                <th>Mode</th>
                <th>Modified</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {(list.data?.items ?? []).map((f) => (
                <tr key={f.path} data-name={f.name}>
                  <td>
                    {f.type === 'dir' ? (
                      <button type="button" className="link" onClick={() => go(f.path)}>
                        {f.name}/
                      </button>
                    ) : (
                      <button
                        type="button"
                        className="link"
                        onClick={() => setPreview(f)}
                        disabled={f.type !== 'file'}
                      >
                        {f.name}
                      </button>
                    )}
                  </td>
                  <td>{f.type === 'file' ? formatBytes(f.size) : ''}</td>
                  <td>{f.mode}</td>
                  <td>{new Date(f.mtime).toLocaleString()}</td>
                  <td className="row-actions">
                    {f.type === 'file' && (
                      <button
                        type="button"
                        className="secondary"
                        onClick={() => download.mutate(f)}
                        aria-label={`Download ${f.name}`}
                      >
                        Download
                      </button>
                    )}
                    <button
                      type="button"
                      className="secondary"
                      aria-label={`Rename ${f.name}`}
                      onClick={() => {
                        const to = prompt('New name or path', f.name);
                        if (to && to !== f.name)
                          op.mutate({
                            kind: 'rename',
                            path: f.path,
                            to: to.startsWith('/') ? to : joinPath(dir, to),
                          });
                      }}
                    >
                      Rename
                    </button>
                    <button
                      type="button"
                      className="danger"
                      aria-label={`Delete ${f.name}`}
                      onClick={() =>
                        confirm(`Delete ${f.path}?`) && op.mutate({ kind: 'delete', path: f.path })
                      }
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
              {list.data?.items.length === 0 && (
                <tr>
                  <td colSpan={5} className="muted">
                    Empty directory.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      {preview && <Preview sandboxId={sandboxId} file={preview} onClose={() => setPreview(null)} />}
    </div>
  );
}

const MAX_TEXT = 256 * 1024;

function Preview({
  sandboxId,
  file,
  onClose,
}: {
  sandboxId: string;
  file: FileInfo;
  onClose: () => void;
}) {
  const kind = previewKind(file.name) ?? (file.size <= MAX_TEXT ? 'text' : null);
  const [url, setUrl] = useState<string | null>(null);
  const content = useQuery({
    queryKey: ['file', sandboxId, file.path, file.mtime],
    enabled: kind !== null,
    queryFn: async () => (await call(filePath(sandboxId, file.path))).blob(),
  });
  useEffect(() => {
    if (kind !== 'image' || !content.data) return;
    const u = URL.createObjectURL(content.data);
    setUrl(u);
    return () => URL.revokeObjectURL(u);
  }, [kind, content.data]);
  const text = useQuery({
    queryKey: ['file-text', sandboxId, file.path, file.mtime],
    enabled: kind === 'text' && !!content.data,
    queryFn: async () => await content.data!.slice(0, MAX_TEXT).text(),
  });
  return (
    <section className="card preview" aria-label={`Preview of ${file.name}`}>
      <div className="title-row">
        <h3>{file.path}</h3>
        <button type="button" className="secondary" onClick={onClose}>
          Close preview
        </button>
      </div>
      <ErrorBox error={content.error} />
      {kind === null && <p className="muted">No preview for this kind of file: download it.</p>}
      {kind === 'image' && url && <img src={url} alt={file.name} />}
      {kind === 'text' && text.data !== undefined && <pre className="file-text">{text.data}</pre>}
      {file.size > MAX_TEXT && kind === 'text' && (
        <p className="muted small">First 256 KiB shown.</p>
      )}
    </section>
  );
}
