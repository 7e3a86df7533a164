import Foundation

/// The paths of a configuration, checked before anything starts: a service that would log an error every
/// few seconds forever (a missing containers directory), or could not import an earlier version's sessions (a
/// `--sessions` path that is not a directory), refuses to start instead, with a message naming the path and a
/// non-zero exit.
enum StartupCheck {
    /// A path the service cannot work with.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Checks the containers directory (it must exist and be a directory), the queue directory's parent
    /// (the queue creates the directory itself) and the sessions directory of an earlier version (when it
    /// exists, it must be a directory; an absent one holds nothing to import).
    static func paths(of configuration: TagServiceConfiguration) throws(Failure) {
        try requireDirectory(configuration.containersDirectory, role: "the containers directory (--containers)")
        try requireParent(of: configuration.queueDirectory, role: "the queue directory (--queue)")
        if let sessions = configuration.sessionsDirectory, exists(sessions) {
            try requireDirectory(sessions, role: "the sessions directory (--sessions)")
        }
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    private static func requireDirectory(_ path: String, role: String) throws(Failure) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(description: "\(role) '\(path)' cannot be used: \(reason())")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw Failure(description: "\(role) '\(path)' is not a directory")
        }
    }

    private static func requireParent(of path: String, role: String) throws(Failure) {
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        let parent = (trimmed as NSString).deletingLastPathComponent
        try requireDirectory(parent.isEmpty ? "." : parent, role: "the parent directory of \(role)")
    }

    private static func reason() -> String { String(cString: strerror(errno)).lowercased() }
}
