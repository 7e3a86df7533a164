/// Turns container file bytes into a ``SourceDocument``: detects the syntax and runs the matching reader.
///
/// Detection, after a UTF-8 byte order mark and whitespace: `bplist` → binary property list; `<` (`<?xml`,
/// `<!DOCTYPE plist`, `<plist`, a comment, a bare `<dict>`) → XML property list; JSON text → JSON; a JavaScript file (a whole
/// `gtm.js`) with a `var data = {…};` declaration → the JSON of that object (``ScriptDataLocator``), with
/// positions relative to the file. Legacy binary (protobuf) containers and other binary files are recognised and refused with
/// `legacy_binary_container`.
package enum DocumentReader {
    /// How many leading bytes are examined to decide whether a file is binary.
    static let sniffLength = 512

    /// How text that starts with `bytes` says it is UTF-16 or UTF-32 rather than UTF-8: a byte order mark, or a
    /// NUL byte beside an opening `{` or `[` (what Windows PowerShell 5's `>` writes, with a mark); `nil` otherwise.
    package static func wideEncoding(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0xFF, 0xFE]) { return "byte order mark 'ff fe'" }
        if bytes.starts(with: [0xFE, 0xFF]) { return "byte order mark 'fe ff'" }
        if bytes.starts(with: [0x00, 0x00, 0xFE, 0xFF]) { return "byte order mark '00 00 fe ff'" }
        guard bytes.count >= 2 else { return nil }
        let opening = { (byte: UInt8) in byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") }
        if opening(bytes[0]) && bytes[1] == 0 || bytes[0] == 0 && opening(bytes[1]) {
            return "NUL bytes between its characters"
        }
        return nil
    }

    static func read(_ bytes: [UInt8], file: String?, options: LoadOptions) throws(ContainerError) -> SourceDocument {
        guard bytes.count <= options.maximumFileSize else {
            throw ContainerError(
                .fileTooLarge,
                "file is \(bytes.count) bytes, more than the limit of \(options.maximumFileSize) bytes",
                file: file
            )
        }
        guard !bytes.isEmpty else {
            throw ContainerError(.syntax, "file is empty", file: file, location: SourceLocation(line: 1, column: 1))
        }
        if let encoding = wideEncoding(bytes) {
            throw ContainerError(
                .syntax,
                "file is utf-16 or utf-32 encoded (\(encoding)); save it as utf-8",
                file: file,
                location: SourceLocation(line: 1, column: 1)
            )
        }
        let origin = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var start = origin
        while start < bytes.count, isWhitespace(bytes[start]) { start += 1 }
        guard start < bytes.count else {
            throw ContainerError(.syntax, "file contains only whitespace", file: file, location: location(start))
        }

        func location(_ offset: Int) -> SourceLocation {
            bytes.withUnsafeBufferPointer { SourceText.location(ofOffset: offset, in: $0, origin: origin) }
        }

        let protobufLike =
            startsLikeProtobuf(bytes, at: origin) && hasBinaryBytes(bytes, from: origin, checkingUTF8: false)
        // A text file that starts with a newline (a protobuf field's tag) and holds a control byte is not refused as
        // a legacy binary before its markup is read.
        if protobufLike && bytes[start] != 0x3C { throw legacyBinaryError(file) }
        if hasPrefix(bytes, "bplist", at: start) {
            let value = try PropertyListReader.read(bytes, from: start, file: file, options: options)
            return SourceDocument(value: value, syntax: .binaryPropertyList, file: file)
        }
        // Markup is read as an XML property list: one that is not (an HTML page where a container was expected)
        // is told so by its root element.
        if bytes[start] == 0x3C {
            let text = SourceText(bytes: bytes, origin: origin, valueStart: start)
            let result: JSONParser.Result
            do { result = try XMLPropertyListParser.parse(text, file: file, options: options) } catch {
                // Not markup after all: a legacy container whose first field is 60 bytes long ('<').
                if protobufLike { throw legacyBinaryError(file) }
                throw error
            }
            return SourceDocument(
                value: result.value,
                syntax: .xmlPropertyList,
                file: file,
                sourceMap: result.sourceMap,
                duplicateKeys: result.duplicateKeys,
                text: nil
            )
        }

        var valueStart = start
        var statement = false
        var embedded = false
        switch bytes[start] {
        case 0x7B, 0x5B, 0x22, 0x2D, 0x30...0x39, 0x74, 0x66, 0x6E:  // { [ " - 0-9 t f n
            break
        case 0x2F where hasPrefix(bytes, "//", at: start) || hasPrefix(bytes, "/*", at: start):
            // A gtm.js script starts with a comment; otherwise the JSON parser explains that comments are
            // not allowed.
            if let object = ScriptDataLocator.find(bytes, from: start) {
                valueStart = object
                embedded = true
            }
        case 0x76 where hasPrefix(bytes, "var", at: start) && start + 3 < bytes.count && isWhitespace(bytes[start + 3]):
            if let object = ScriptDataLocator.find(bytes, from: start) {
                valueStart = object
                embedded = true
            } else {
                valueStart = try skipAssignment(bytes, from: start + 3, file: file, location: location)
                statement = true
            }
        default:
            if startsLikeProtobuf(bytes, at: origin) { throw legacyBinaryError(file) }
            // Other binary data (an image, an archive, a truncated download) is no container of any kind: a legacy
            // container starts like a protobuf message.
            if hasBinaryBytes(bytes, from: origin, checkingUTF8: true) {
                throw ContainerError(
                    .syntax,
                    binaryDataMessage + binaryHint(bytes, at: origin),
                    file: file,
                    location: SourceLocation(line: 1, column: 1)
                )
            }
            if let object = ScriptDataLocator.find(bytes, from: start) {
                valueStart = object
                embedded = true
                break
            }
            // Text pasted in front of a container (a note, a broken copy): say where the object starts.
            var hint = ""
            if let brace = bytes[start..<min(bytes.count, start + 4096)].firstIndex(of: 0x7B) {
                let at = location(brace)
                hint = "; a JSON object starts at \(at.line):\(at.column): remove what comes before it"
            }
            throw ContainerError(
                .syntax,
                "not json or a property list: unexpected \(describe(bytes, at: start))\(hint)",
                file: file,
                location: location(start)
            )
        }

        let text = SourceText(bytes: bytes, origin: origin, valueStart: valueStart)
        let result = try JSONParser.parse(
            text,
            file: file,
            options: options,
            statement: statement,
            embedded: embedded
        )
        var document = SourceDocument(
            value: result.value,
            syntax: .json,
            file: file,
            sourceMap: result.sourceMap,
            duplicateKeys: result.duplicateKeys,
            text: text
        )
        document.isScript = statement || embedded
        if embedded { document.scriptContainerID = ScriptDataLocator.containerID(in: bytes) }
        return document
    }

    /// After `var`: skips `name =` and whitespace (the gtm.js form) and returns where the value starts.
    private static func skipAssignment(
        _ bytes: [UInt8],
        from offset: Int,
        file: String?,
        location: (Int) -> SourceLocation
    ) throws(ContainerError) -> Int {
        var i = offset
        while i < bytes.count, isWhitespace(bytes[i]) { i += 1 }
        let nameStart = i
        while i < bytes.count, isIdentifierByte(bytes[i]), i == nameStart ? !(0x30...0x39).contains(bytes[i]) : true {
            i += 1
        }
        guard i > nameStart else {
            throw ContainerError(
                .syntax,
                "expected a variable name after 'var', found \(describe(bytes, at: i))",
                file: file,
                location: location(i)
            )
        }
        let name = String(decoding: bytes[nameStart..<i], as: UTF8.self)
        while i < bytes.count, isWhitespace(bytes[i]) { i += 1 }
        guard i < bytes.count, bytes[i] == 0x3D else {
            throw ContainerError(
                .syntax,
                "expected '=' after 'var \(name)', found \(describe(bytes, at: i))",
                file: file,
                location: location(i)
            )
        }
        i += 1
        while i < bytes.count, isWhitespace(bytes[i]) { i += 1 }
        return i
    }

    /// The start of the message of a file of binary data that is no legacy container.
    static let binaryDataMessage = "binary data, not json or a property list"

    /// Whether `error` is the refusal of binary data (a legacy container's or another's): about files; a reader of
    /// JSON text says which byte instead.
    static func isBinaryRefusal(_ error: ContainerError) -> Bool {
        error.code == .legacyBinary || (error.code == .syntax && error.message.hasPrefix(binaryDataMessage))
    }

    /// What binary data at `offset` is, when its first bytes say so: `" (…)"` or empty.
    private static func binaryHint(_ bytes: [UInt8], at offset: Int) -> String {
        let head = bytes[offset...]
        if head.starts(with: [0x1F, 0x8B]) { return " (gzip-compressed: decompress it first)" }
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return " (a zip archive: extract the container from it)" }
        if head.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) { return " (zstd-compressed: decompress it first)" }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return " (a png image)" }
        return ""
    }

    private static func legacyBinaryError(_ file: String?) -> ContainerError {
        ContainerError(
            .legacyBinary,
            "this looks like a legacy binary (protobuf) GTM default container (v3/v4 SDK); ContainerKit reads "
                + "JSON and property-list containers only: export the container from the GTM UI as JSON",
            file: file
        )
    }

    private static func isWhitespace(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09
    }

    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x24
    }

    private static func hasPrefix(_ bytes: [UInt8], _ prefix: StaticString, at offset: Int) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard offset + count <= bytes.count else { return false }
        for k in 0..<count where bytes[offset + k] != prefix.utf8Start[k] { return false }
        return true
    }

    /// Whether the bytes at `offset` start like a protobuf message: a length-delimited field 1 or 2
    /// (tag `0x0a` or `0x12`) whose varint length fits in the file.
    static func startsLikeProtobuf(_ bytes: [UInt8], at offset: Int) -> Bool {
        guard offset < bytes.count, bytes[offset] == 0x0A || bytes[offset] == 0x12 else { return false }
        var length: UInt64 = 0
        var shift: UInt64 = 0
        var i = offset + 1
        while i < bytes.count, shift < 64 {
            let b = bytes[i]
            length |= UInt64(b & 0x7F) << shift
            i += 1
            if b & 0x80 == 0 { return length <= UInt64(bytes.count - i) }
            shift += 7
        }
        return false
    }

    /// Whether the first ``sniffLength`` bytes hold a NUL or another control character that text does not
    /// use, or (when `checkingUTF8`) invalid UTF-8.
    static func hasBinaryBytes(_ bytes: [UInt8], from offset: Int, checkingUTF8: Bool) -> Bool {
        let end = min(bytes.count, offset + sniffLength)
        return bytes.withUnsafeBufferPointer { buffer in
            guard let p = buffer.baseAddress else { return false }
            var i = offset
            while i < end {
                let b = p[i]
                if b < 0x20, b != 0x09, b != 0x0A, b != 0x0D, b != 0x0C { return true }
                if b >= 0x80, checkingUTF8 {
                    if let length = UTF8Validation.sequenceLength(p, at: i, end: buffer.count) {
                        i += length
                        continue
                    }
                    return true
                }
                i += 1
            }
            return false
        }
    }

    private static func describe(_ bytes: [UInt8], at offset: Int) -> String {
        guard offset < bytes.count else { return "end of file" }
        let b = bytes[offset]
        if b >= 0x21, b < 0x7F {
            var end = offset + 1
            if isIdentifierByte(b) {
                while end < bytes.count, end - offset < 24, isIdentifierByte(bytes[end]) { end += 1 }
            }
            return "'\(String(decoding: bytes[offset..<end], as: UTF8.self))'"
        }
        let length = bytes.withUnsafeBufferPointer { buffer -> Int? in
            b >= 0x80 ? UTF8Validation.sequenceLength(buffer.baseAddress!, at: offset, end: buffer.count) : nil
        }
        if let length { return "'\(String(decoding: bytes[offset..<(offset + length)], as: UTF8.self))'" }
        let digits = String(b, radix: 16)
        return "byte 0x\(digits.count < 2 ? "0" : "")\(digits)"
    }
}
