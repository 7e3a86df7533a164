import ContainerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The package's file system calls (ContainerKit's `FileSystem`) as the file-backed sinks use them: the
/// same calls, with failures turned into ``AnalyticsSinkError`` values classified by `errno`.
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

    /// The sink error for a failed file system call.
    static func error(_ failure: FileSystemError) -> AnalyticsSinkError {
        if failure.step == "creating the directory" && failure.errorNumber == ENOTDIR {
            return AnalyticsSinkError(.unwritable, "'\(failure.path)' is not a directory", errorNumber: ENOTDIR)
        }
        return error(failure.step, failure.path, errorNumber: failure.errorNumber)
    }

    /// Opens `path`, retrying on `EINTR`. A file it creates is private (`0600`): queue segments, the ack
    /// and records files hold user IDs and event parameters.
    static func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws(AnalyticsSinkError) -> Int32 {
        do { return try FileSystem.openFile(path, flags, mode: mode) } catch { throw Self.error(error) }
    }

    /// Writes all of `bytes`, retrying short writes and `EINTR`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(AnalyticsSinkError) {
        do { try FileSystem.writeAll(fd, bytes, path: path) } catch { throw Self.error(error) }
    }

    /// Writes all of `bytes`.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(AnalyticsSinkError) {
        do { try FileSystem.writeAll(fd, bytes, path: path) } catch { throw Self.error(error) }
    }

    /// `fsync(2)`.
    static func sync(_ fd: Int32, path: String) throws(AnalyticsSinkError) {
        do { try FileSystem.sync(fd, path: path) } catch { throw Self.error(error) }
    }

    /// `fdatasync(2)` (see `FileSystem.syncData`).
    static func syncData(_ fd: Int32, path: String) throws(AnalyticsSinkError) {
        do { try FileSystem.syncData(fd, path: path) } catch { throw Self.error(error) }
    }

    /// Makes the directory entries in `directory` durable (after creating, renaming or deleting files).
    static func syncDirectory(_ directory: String) throws(AnalyticsSinkError) {
        do { try FileSystem.syncDirectory(directory) } catch { throw Self.error(error) }
    }

    /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
    static func readBytes(_ fd: Int32, count: Int, at offset: Int, path: String) throws(AnalyticsSinkError) -> [UInt8] {
        do { return try FileSystem.readBytes(fd, count: count, at: offset, path: path) } catch {
            throw Self.error(error)
        }
    }

    /// Reads a whole (small) file; `nil` when it does not exist.
    static func readFile(_ path: String) throws(AnalyticsSinkError) -> [UInt8]? {
        do { return try FileSystem.readFile(path) } catch { throw Self.error(error) }
    }

    /// Writes `bytes` to `path` atomically, with the package's one helper (`AtomicFile`).
    static func replaceFile(_ path: String, with bytes: [UInt8]) throws(AnalyticsSinkError) {
        do { try AtomicFile.write(bytes, to: path, mode: 0o600) } catch { throw Self.error(error) }
    }

    /// The names in `directory`.
    static func listDirectory(_ directory: String) throws(AnalyticsSinkError) -> [String] {
        do { return try FileSystem.listDirectory(directory) } catch { throw Self.error(error) }
    }

    /// Creates `directory` and its parents if they are missing, private (`0700`).
    static func makeDirectory(_ directory: String) throws(AnalyticsSinkError) {
        do { try FileSystem.makeDirectory(directory, mode: 0o700) } catch { throw Self.error(error) }
    }
}
