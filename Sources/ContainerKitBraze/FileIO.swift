import ContainerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin wrappers around the system calls the file-backed sinks use, turning failures into
/// ``AnalyticsSinkError`` values.
enum FileIO {
    /// The error for a failed system call `what` on `path`, classified by `errno`.
    static func error(_ what: String, _ path: String, errorNumber: Int32 = errno) -> AnalyticsSinkError {
        let reason = String(cString: strerror(errorNumber)).lowercased()
        let message = "\(what) '\(path)' failed: \(reason)"
        switch errorNumber {
        case ENOSPC, EDQUOT: return AnalyticsSinkError(.diskFull, message, errorNumber: errorNumber)
        case EACCES, EPERM, EROFS, ENOTDIR, ENOENT, EISDIR:
            return AnalyticsSinkError(.unwritable, message, errorNumber: errorNumber)
        default: return AnalyticsSinkError(.io, message, errorNumber: errorNumber)
        }
    }

    /// Opens `path`, retrying on `EINTR`.
    static func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(AnalyticsSinkError) -> Int32 {
        while true {
            let fd = open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno != EINTR { throw error("opening", path) }
        }
    }

    /// Writes all of `bytes`, retrying short writes and `EINTR`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(AnalyticsSinkError) {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw error("writing", path, errorNumber: n == 0 ? EIO : errno)
            }
        }
    }

    /// Writes all of `bytes`.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(AnalyticsSinkError) {
        guard !bytes.isEmpty else { return }
        var failure: AnalyticsSinkError?
        bytes.withUnsafeBytes { buffer in
            do throws(AnalyticsSinkError) {
                try writeAll(fd, buffer, path: path)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// `fsync(2)`.
    static func sync(_ fd: Int32, path: String) throws(AnalyticsSinkError) {
        while fsync(fd) != 0 {
            if errno != EINTR { throw error("syncing", path) }
        }
    }

    /// Makes the directory entries in `directory` durable (after creating, renaming or deleting files).
    static func syncDirectory(_ directory: String) throws(AnalyticsSinkError) {
        let fd = try openFile(directory, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try sync(fd, path: directory)
    }

    /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
    static func readBytes(_ fd: Int32, count: Int, at offset: Int, path: String) throws(AnalyticsSinkError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        var failure: Int32 = 0
        bytes.withUnsafeMutableBytes { buffer in
            while filled < count {
                let n = pread(fd, buffer.baseAddress! + filled, count - filled, off_t(offset + filled))
                if n > 0 {
                    filled += n
                } else if n == 0 {
                    break
                } else if errno != EINTR {
                    failure = errno
                    break
                }
            }
        }
        if failure != 0 { throw error("reading", path, errorNumber: failure) }
        bytes.removeLast(count - filled)
        return bytes
    }

    /// The size of an open file.
    static func fileSize(_ fd: Int32, path: String) throws(AnalyticsSinkError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw error("reading the size of", path) }
        return Int(info.st_size)
    }

    /// Reads a whole (small) file; `nil` when it does not exist.
    static func readFile(_ path: String) throws(AnalyticsSinkError) -> [UInt8]? {
        let fd: Int32
        do {
            fd = try openFile(path, O_RDONLY)
        } catch {
            if error.errorNumber == ENOENT { return nil }
            throw error
        }
        defer { close(fd) }
        return try readBytes(fd, count: fileSize(fd, path: path), at: 0, path: path)
    }

    /// Writes `bytes` to `path` atomically, with the package's one helper (`AtomicFile`).
    static func replaceFile(_ path: String, with bytes: [UInt8]) throws(AnalyticsSinkError) {
        do {
            try AtomicFile.write(bytes, to: path)
        } catch {
            throw FileIO.error(error.step, error.path, errorNumber: error.errorNumber)
        }
    }

    /// The names in `directory`.
    static func listDirectory(_ directory: String) throws(AnalyticsSinkError) -> [String] {
        guard let handle = opendir(directory) else { throw error("listing", directory) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Creates `directory` and its parents if they are missing.
    static func makeDirectory(_ directory: String) throws(AnalyticsSinkError) {
        var path = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            path += (path.isEmpty && !directory.hasPrefix("/") ? "" : "/") + component
            if mkdir(path, 0o755) != 0 && errno != EEXIST { throw error("creating the directory", path) }
        }
        var info = stat()
        guard stat(directory, &info) == 0 else { throw error("reading", directory) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw AnalyticsSinkError(.unwritable, "'\(directory)' is not a directory", errorNumber: ENOTDIR)
        }
    }
}
