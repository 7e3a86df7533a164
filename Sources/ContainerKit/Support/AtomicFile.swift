#if canImport(Glibc)
    package import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The package's one way to replace a file atomically: a temporary file beside it, `fsync`, `rename`
/// over the file, `fsync` of the directory. A crash leaves the old file or the new one, never a mix.
/// Used by the saved-container store and the durable queue's ack file; built on ``FileSystem``.
package enum AtomicFile {
    /// Why a replacement failed: the step (`creating`, `writing`, `syncing`, `renaming` or
    /// `syncing the directory of`), the path it touched and the `errno`.
    package typealias Failure = FileSystemError

    /// Writes `bytes` to `path` atomically. The temporary file is `<path>.tmp` (replaced if a crash left
    /// one), or `<path>.tmp-<random>` with `uniqueTemporary` when several writers may replace the same
    /// file at once; it is removed when a step fails.
    /// `mode` is the new file's permission bits (before the umask); `0o600` for private data.
    package static func write(
        _ bytes: [UInt8],
        to path: String,
        uniqueTemporary: Bool = false,
        mode: mode_t = 0o644
    ) throws(Failure) {
        var random = SystemRandomNumberGenerator()
        let temporary = uniqueTemporary ? "\(path).tmp-\(String(random.next() as UInt64, radix: 36))" : path + ".tmp"
        let fd = try FileSystem.openFile(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode: mode, step: "creating")
        do throws(FileSystemError) {
            defer { close(fd) }
            try FileSystem.writeAll(fd, bytes, path: temporary)
            try FileSystem.sync(fd, path: temporary)
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let failure = Failure(step: "renaming", path: temporary, errorNumber: errno)
            unlink(temporary)
            throw failure
        }
        do throws(FileSystemError) {
            try FileSystem.syncDirectory(FileSystem.directory(of: path))
        } catch {
            throw Failure(step: "syncing the directory of", path: path, errorNumber: error.errorNumber)
        }
    }
}
