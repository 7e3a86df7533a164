#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The package's one way to replace a file atomically: a temporary file beside it, `fsync`, `rename`
/// over the file, `fsync` of the directory. A crash leaves the old file or the new one, never a mix.
/// Used by the saved-container store and the durable queue's ack file.
package enum AtomicFile {
    /// Why a replacement failed: the step, the path it touched and the `errno`.
    package struct Failure: Error, Sendable {
        /// `creating`, `writing`, `syncing`, `renaming` or `syncing the directory of`.
        package var step: String
        /// The file the step touched.
        package var path: String
        /// The system error number.
        package var errorNumber: Int32
    }

    /// Writes `bytes` to `path` atomically. The temporary file is `<path>.tmp` (replaced if a crash left
    /// one), or `<path>.tmp-<random>` with `uniqueTemporary` when several writers may replace the same
    /// file at once; it is removed when a step fails.
    package static func write(_ bytes: [UInt8], to path: String, uniqueTemporary: Bool = false) throws(Failure) {
        var random = SystemRandomNumberGenerator()
        let temporary = uniqueTemporary ? "\(path).tmp-\(String(random.next() as UInt64, radix: 36))" : path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(step: "creating", path: temporary, errorNumber: errno) }
        var failure: Failure?
        bytes.withUnsafeBytes { buffer in
            var written = 0
            while written < buffer.count {
                let n = systemWrite(fd, buffer.baseAddress! + written, buffer.count - written)
                if n > 0 {
                    written += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    failure = Failure(step: "writing", path: temporary, errorNumber: n == 0 ? EIO : errno)
                    return
                }
            }
        }
        if failure == nil {
            while fsync(fd) != 0 {
                if errno != EINTR {
                    failure = Failure(step: "syncing", path: temporary, errorNumber: errno)
                    break
                }
            }
        }
        close(fd)
        if failure == nil && rename(temporary, path) != 0 {
            failure = Failure(step: "renaming", path: temporary, errorNumber: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else {
            throw Failure(step: "syncing the directory of", path: path, errorNumber: errno)
        }
        defer { close(directoryFD) }
        while fsync(directoryFD) != 0 {
            if errno != EINTR { throw Failure(step: "syncing the directory of", path: path, errorNumber: errno) }
        }
    }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(fd, buffer, count)
    #else
        Darwin.write(fd, buffer, count)
    #endif
}
