public import Foundation
public import Testing

/// Where test fixtures live: the package root, the shared corpus of real container files and `Containers/`.
public enum Fixtures {
    /// The package root (the folder with `Package.swift`), derived from this file's path.
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // TestSupport
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// The corpus of real container files (`../shared/research/corpus` beside the package root), or `nil`
    /// when it is not there. The environment variable `CONTAINERKIT_CORPUS` overrides the location.
    ///
    /// Corpus tests should skip visibly when it is missing:
    /// `@Test(.enabled(if: Fixtures.corpusDirectory != nil, Fixtures.corpusMissing))`.
    public static let corpusDirectory: URL? = {
        let url: URL
        if let path = ProcessInfo.processInfo.environment["CONTAINERKIT_CORPUS"], !path.isEmpty {
            url = URL(fileURLWithPath: path)
        } else {
            url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/research/corpus")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        return url.standardizedFileURL
    }()

    /// The comment for tests that are disabled because the corpus is missing.
    public static let corpusMissing: Comment = "corpus not found at ../shared/research/corpus; corpus tests skipped"

    /// The corpus files (not the README), sorted by path; only those under the `kind` folder
    /// (`"v5-mobile"`, `"resource"`, `"export-mobile"`, `"export-web"`, `"v3-default"`) when given.
    /// Empty when the corpus is missing.
    public static func corpusFiles(in kind: String? = nil) -> [URL] {
        guard let root = corpusDirectory else { return [] }
        let directory = kind.map { root.appendingPathComponent($0) } ?? root
        guard
            let enumerator = FileManager.default.enumerator(
                at: directory,
                includingPropertiesForKeys: [.isRegularFileKey],
                options: [.skipsHiddenFiles]
            )
        else { return [] }
        var files: [URL] = []
        for case let url as URL in enumerator {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true,
                url.lastPathComponent != "README.md"
            else { continue }
            files.append(url)
        }
        return files.sorted { $0.path < $1.path }
    }

    /// The project's own sample containers (`Containers/` in the package root).
    public static let containersDirectory: URL = packageRoot.appendingPathComponent("Containers")

    /// The bytes of a file; fails the calling test with a clear message when it cannot be read.
    public static func bytes(of url: URL) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url))
    }

    /// The path of `url` relative to the corpus directory (for test names and messages).
    public static func corpusName(_ url: URL) -> String {
        guard let root = corpusDirectory?.path else { return url.lastPathComponent }
        let path = url.standardizedFileURL.path
        return path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : url.lastPathComponent
    }
}
