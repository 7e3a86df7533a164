public import ContainerKit
import Foundation

/// Turns the paths given to `containerkit lint` into the list of files to lint.
///
/// Files given by name are always linted. Directories are walked recursively (hidden entries are
/// skipped) for `*.json` and `*.plist` files, `gtm.js` scripts, and legacy binary containers: files
/// without an extension named like `GTM-XXXX` or `gtm_xxxx`. Files matching the configuration's `excluded`
/// patterns are skipped in walks. The result is sorted so output is deterministic.
public enum LintPaths {
    /// The files to lint under `paths`, in sorted order.
    /// - Parameter configuration: the configuration whose `excluded` patterns apply to a walked file.
    /// - Throws: ``ContainerError`` with code `io_error` when a path does not exist or cannot be listed.
    public static func collect(
        _ paths: [String],
        configuration: (String) throws(ContainerError) -> LintConfiguration
    ) throws(ContainerError) -> [String] {
        var files: [String] = []
        var seen = Set<String>()
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ContainerError(.io, "no such file or directory '\(path)'", file: path)
            }
            if !isDirectory.boolValue {
                if seen.insert(path).inserted { files.append(path) }
                continue
            }
            var found: [String] = []
            try walk(path, into: &found)
            found.sort()
            for file in found where seen.insert(file).inserted {
                if try configuration(file).isExcluded(file) { continue }
                files.append(file)
            }
        }
        return files
    }

    /// Whether a file met in a directory walk is a container candidate.
    public static func isCandidate(_ name: String) -> Bool {
        let lower = name.lowercased()
        if lower.hasSuffix(".json") || lower.hasSuffix(".plist") || lower == "gtm.js" { return true }
        guard !name.contains(".") else { return false }
        return name.hasPrefix("GTM-") || lower.hasPrefix("gtm_")
    }

    private static func walk(_ directory: String, into files: inout [String]) throws(ContainerError) {
        let entries: [String]
        do { entries = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw ContainerError(.io, "cannot list directory '\(directory)'", file: directory)
        }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        for name in entries.sorted() where !name.hasPrefix(".") {
            let path = prefix + name
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                try walk(path, into: &files)
            } else if isCandidate(name) {
                files.append(path)
            }
        }
    }

    /// `path` made absolute against the current directory, with `.` and `..` segments removed.
    public static func absolute(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The directory part of an absolute path (`/` for a top-level entry).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
