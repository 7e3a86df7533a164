/// A position in a text file: 1-based line and column (in Unicode scalars), and the 0-based byte offset.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 1-based line.
    public var line: Int
    /// The 1-based column, counted in Unicode scalars.
    public var column: Int
    /// The 0-based byte offset into the file.
    public var offset: Int

    /// Creates a location.
    public init(line: Int, column: Int, offset: Int = 0) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }

    public var description: String { "\(line):\(column)" }
}

/// The module's one error type: what went wrong and where. A stable code, a message naming the offending
/// value, and where it happened as far as known: the file, a JSON pointer into the document and, for JSON
/// input, the line and column; for an HTTP answer, its status; for a failed system call, its `errno`.
///
/// Loading, fetching (``ContainerFetchError``), preview URLs (``PreviewURLError``), durability waits
/// (``DurabilityError``) and regular expressions (``RegexPatternError``) all throw it; those names are
/// aliases that say which codes to expect. Like swift-service-lifecycle's errors, the code is extensible: a
/// library adds its own with `extension ContainerError.Code { static let … }`.
public struct ContainerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code. Extensible: libraries may add their own.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The file could not be read.
        public static let io = Code(rawValue: "io_error")
        /// The file is larger than the loader's limit.
        public static let fileTooLarge = Code(rawValue: "file_too_large")
        /// The JSON or property list is malformed.
        public static let syntax = Code(rawValue: "syntax_error")
        /// Arrays and maps nest deeper than the loader's limit.
        public static let nestingTooDeep = Code(rawValue: "nesting_too_deep")
        /// The document is well formed but is none of the container formats.
        public static let unknownFormat = Code(rawValue: "unknown_format")
        /// A legacy binary (protobuf) container, which ContainerKit does not read.
        public static let legacyBinary = Code(rawValue: "legacy_binary_container")
        /// A part of the container has the wrong type or shape.
        public static let invalidStructure = Code(rawValue: "invalid_structure")
        /// A reference (macro, predicate, tag, trigger or variable) that points at nothing.
        public static let danglingReference = Code(rawValue: "dangling_reference")
        /// The container ID is missing or breaks the `GTM-XXXX` pattern.
        public static let invalidContainerID = Code(rawValue: "invalid_container_id")
        /// A collection is larger than the loader's limit.
        public static let tooLarge = Code(rawValue: "too_large")
        /// A part of the container ContainerKit does not run (web-only tags, macros, operators).
        public static let unsupportedFeature = Code(rawValue: "unsupported_feature")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message naming the offending value in quotes.
    public var message: String
    /// The file the error is in, when known.
    public var file: String?
    /// A JSON pointer (RFC 6901) to the offending part of the document; `""` is the whole document.
    public var pointer: String
    /// The line and column, when the input is JSON text.
    public var location: SourceLocation?
    /// The HTTP status of the answer, for ``Code/httpStatus``.
    public var status: Int?
    /// The `errno` behind the error, when a system call failed.
    public var errorNumber: Int32?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        file: String? = nil,
        pointer: String = "",
        location: SourceLocation? = nil,
        status: Int? = nil,
        errorNumber: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.file = file
        self.pointer = pointer
        self.location = location
        self.status = status
        self.errorNumber = errorNumber
    }

    /// `file:line:col: message (code) at pointer`, leaving out what is unknown.
    public var description: String {
        var out = ""
        if let file { out += file + ":" }
        if let location { out += "\(location.line):\(location.column):" }
        if !out.isEmpty { out += " " }
        out += message
        out += " (\(code.rawValue))"
        if !pointer.isEmpty { out += " at \(pointer)" }
        return out
    }
}

/// JSON pointer helpers (RFC 6901).
public enum JSONPointer {
    /// Escapes one reference token: `~` → `~0`, `/` → `~1`.
    public static func escape(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 == 0x7E || $0 == 0x2F }) else { return token }
        return token.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
    }

    /// Appends a key or index token to a pointer.
    public static func appending(_ pointer: String, _ token: String) -> String {
        pointer + "/" + escape(token)
    }

    /// Appends an index token to a pointer.
    public static func appending(_ pointer: String, _ index: Int) -> String {
        pointer + "/" + String(index)
    }
}

extension String {
    /// Replaces every occurrence of `target` (non-empty) by `replacement`, without Foundation.
    package func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        out += rest
        return out
    }
}
