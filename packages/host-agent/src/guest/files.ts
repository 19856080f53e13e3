/** HostFileApi over a sandbox's guest channel: every path is a path inside the sandbox. */
import { GUEST_PATHS, type FileInfo, type FileList, type HostFileApi } from '@warren/protocol';
import type { GuestChannel } from './channel';
import { watchFiles } from './watch';

export function guestFiles(channelOf: (id: string) => GuestChannel): HostFileApi {
  return {
    read: (id, path) => channelOf(id).download(path),
    async write(id, path, body, mode) {
      const info = await channelOf(id).upload(path, body, mode);
      return { path: info.path, size: info.size };
    },
    list: (id, path) =>
      channelOf(id).json<FileList>({ path: GUEST_PATHS.filesList, query: { path } }),
    stat: (id, path) =>
      channelOf(id).json<FileInfo>({ path: GUEST_PATHS.filesStat, query: { path } }),
    mkdir: (id, req) =>
      channelOf(id).json<FileInfo>({ method: 'POST', path: GUEST_PATHS.filesMkdir, json: req }),
    rename: (id, req) =>
      channelOf(id).json<FileInfo>({ method: 'POST', path: GUEST_PATHS.filesRename, json: req }),
    watch: (id, path, o) => watchFiles(channelOf(id), path, o),
    async remove(id, path, recursive) {
      await channelOf(id).json({
        method: 'DELETE',
        path: GUEST_PATHS.files,
        query: { path, recursive: recursive ? '1' : '0' },
      });
    },
  };
}
