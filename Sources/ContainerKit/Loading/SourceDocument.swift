/// A container file read into a ``Value`` tree, with what is needed to point back into the file.
///
/// ``DocumentReader`` makes these from JSON (also the gtm.js `var data = {…};` form), XML property lists
/// and binary property lists. For JSON the document keeps the original bytes, so ``locate(_:)`` can find
/// the line and column of any value later, even when positions were not recorded while reading; an XML
/// property list has them when they were recorded (``LoadOptions/recordPositions``).
public struct SourceDocument: Sendable {
    /// The syntax the file was written in.
    public enum Syntax: String, Sendable, Hashable {
        /// JSON text, including the gtm.js form `var data = {…};`.
        case json
        /// An XML property list.
        case xmlPropertyList = "xml_plist"
        /// A binary property list (`bplist00`).
        case binaryPropertyList = "binary_plist"
    }

    /// The document's value. For duplicate object keys the last occurrence wins.
    public let value: Value
    /// The syntax the file was written in.
    public let syntax: Syntax
    /// The file name used in errors, when known.
    public let file: String?
    /// Where each value is. Present for JSON and XML property lists when ``LoadOptions/recordPositions`` is set.
    public let sourceMap: SourceMap?
    /// Object keys that occur more than once in the same object (or `<dict>`), in file order (not for binary
    /// property lists, which Foundation reads).
    public let duplicateKeys: [DuplicateKey]
    /// The original JSON text, kept for ``locate(_:)``; `nil` for property lists.
    let text: SourceText?
    /// Whether the JSON was read out of a JavaScript file (gtm.js: `var data = {…};`): a web container.
    var isScript = false
    /// The container ID a `gtm.js` script names for itself (`ctid:"GTM-XXXX"`, `containerId:"GTM-XXXX"`),
    /// when the document was read out of one.
    public internal(set) var scriptContainerID: String?

    /// Creates a document from a value, e.g. for tests or documents built in memory.
    public init(
        value: Value,
        syntax: Syntax = .json,
        file: String? = nil,
        sourceMap: SourceMap? = nil,
        duplicateKeys: [DuplicateKey] = []
    ) {
        self.init(
            value: value,
            syntax: syntax,
            file: file,
            sourceMap: sourceMap,
            duplicateKeys: duplicateKeys,
            text: nil
        )
    }

    init(
        value: Value,
        syntax: Syntax,
        file: String?,
        sourceMap: SourceMap?,
        duplicateKeys: [DuplicateKey],
        text: SourceText?
    ) {
        self.value = value
        self.syntax = syntax
        self.file = file
        self.sourceMap = sourceMap
        self.duplicateKeys = duplicateKeys
        self.text = text
    }

    /// The location of the value at the JSON pointer `pointer`, from the ``sourceMap``.
    ///
    /// Cheap; `nil` when positions were not recorded or nothing is at that pointer. See ``locate(_:)``.
    public func location(of pointer: String) -> SourceLocation? {
        sourceMap?.location(of: pointer)
    }

    /// The location of the key of the object member at `pointer`, from the ``sourceMap``.
    ///
    /// `nil` when positions were not recorded, or when `pointer` is the root or an array element.
    public func keyLocation(of pointer: String) -> SourceLocation? {
        sourceMap?.keyLocation(of: pointer)
    }

    /// The location of the value at `pointer`, also when positions were not recorded.
    ///
    /// Uses the ``sourceMap`` when there is one; otherwise scans the original JSON text for that pointer
    /// (linear in the file size, without building values). `nil` for unknown pointers, binary property lists, and
    /// XML property lists read without positions.
    public func locate(_ pointer: String) -> SourceLocation? {
        if let sourceMap { return sourceMap.location(of: pointer) }
        guard let text, let found = JSONLocator.find(pointer, in: text) else { return nil }
        return text.location(ofOffset: found.value)
    }

    /// The location of the key of the object member at `pointer`, also when positions were not recorded.
    public func locateKey(_ pointer: String) -> SourceLocation? {
        if let sourceMap { return sourceMap.keyLocation(of: pointer) }
        guard let text, let key = JSONLocator.find(pointer, in: text)?.key else { return nil }
        return text.location(ofOffset: key)
    }
}

/// An object key that occurs more than once in the same JSON object. The document keeps the last value.
public struct DuplicateKey: Sendable, Hashable, CustomStringConvertible {
    /// The JSON pointer of the object that has the key twice.
    public let pointer: String
    /// The repeated key.
    public let key: String
    /// The location of the repeated occurrence's key (the second, third, … one).
    public let location: SourceLocation

    /// Creates a record.
    public init(pointer: String, key: String, location: SourceLocation) {
        self.pointer = pointer
        self.key = key
        self.location = location
    }

    public var description: String { "\(location): duplicate key '\(key)' in object at '\(pointer)'" }
}

/// Where every value (and every object member's key) of a JSON document is.
///
/// Recording stores byte offsets only; lines and columns are computed on demand from a line-start table.
/// Lookups walk the pointer's tokens, so each costs about as much as the pointer is long
/// (objects with many members get a hash index).
public struct SourceMap: Sendable {
    struct Node: Sendable {
        /// Byte offset of the value's first character.
        var offset: Int32
        /// Byte offset of the member's key (its opening quote), or -1.
        var keyOffset: Int32
        /// For containers, where the children start in `children`.
        var childStart: Int32
        /// For containers, how many children; -1 for scalars.
        var childCount: Int32
        var isObject: Bool
    }

    let text: SourceText
    let lines: LineTable
    let nodes: [Node]
    let children: [Int32]
    let childKeys: [String]
    let objectIndexes: [Int32: [ByteKey: Int32]]

    /// The number of values in the file, counting those that a later duplicate key overwrote.
    public var valueCount: Int { nodes.count }

    /// The location of the value at the JSON pointer `pointer` (`""` is the whole document).
    public func location(of pointer: String) -> SourceLocation? {
        guard let node = node(at: pointer) else { return nil }
        return location(ofOffset: Int(nodes[node].offset))
    }

    /// The location of the key of the object member at `pointer`; `nil` for the root and array elements.
    public func keyLocation(of pointer: String) -> SourceLocation? {
        guard let node = node(at: pointer), nodes[node].keyOffset >= 0 else { return nil }
        return location(ofOffset: Int(nodes[node].keyOffset))
    }

    /// The line and column of a byte offset into the file.
    public func location(ofOffset offset: Int) -> SourceLocation {
        lines.location(ofOffset: offset, in: text)
    }

    /// The node index of the value at `pointer`.
    func node(at pointer: String) -> Int? {
        guard !nodes.isEmpty, let tokens = JSONPointer.tokens(of: pointer) else { return nil }
        var current = 0
        for token in tokens {
            let node = nodes[current]
            guard node.childCount >= 0 else { return nil }
            let start = Int(node.childStart)
            let count = Int(node.childCount)
            if node.isObject {
                if let index = objectIndexes[Int32(current)] {
                    guard let child = index[ByteKey(token)] else { return nil }
                    current = Int(child)
                } else {
                    var found: Int?
                    var k = start + count - 1
                    while k >= start {
                        if childKeys[k].hasSameBytes(as: token) {
                            found = Int(children[k])
                            break
                        }
                        k -= 1
                    }
                    guard let found else { return nil }
                    current = found
                }
            } else {
                guard let index = JSONPointer.arrayIndex(token), index < count else { return nil }
                current = Int(children[start + index])
            }
        }
        return current
    }
}

/// The original bytes of a JSON document, shared by the document, its source map and its errors.
final class SourceText: Sendable {
    let bytes: [UInt8]
    /// Where line 1 starts: 0, or 3 after a UTF-8 byte order mark (which is not counted as a column).
    let origin: Int
    /// Where the JSON value starts (after whitespace, and after `var data =` in the gtm.js form).
    let valueStart: Int

    init(bytes: [UInt8], origin: Int, valueStart: Int) {
        self.bytes = bytes
        self.origin = origin
        self.valueStart = valueStart
    }

    /// The line and column of `offset`, by scanning from the start (for one-off lookups and errors).
    func location(ofOffset offset: Int) -> SourceLocation {
        bytes.withUnsafeBufferPointer { SourceText.location(ofOffset: offset, in: $0, origin: origin) }
    }

    /// The line and column of `offset` in `bytes`, lines starting at `origin`.
    ///
    /// Lines end at LF, CRLF or a lone CR. Columns count Unicode scalars (UTF-8 lead bytes and invalid bytes).
    static func location(ofOffset offset: Int, in bytes: UnsafeBufferPointer<UInt8>, origin: Int) -> SourceLocation {
        let offset = max(0, min(offset, bytes.count))
        guard offset >= origin else { return SourceLocation(line: 1, column: 1, offset: offset) }
        var line = 1
        var lineStart = origin
        var j = origin
        while j < offset {
            let b = bytes[j]
            if b == 0x0A || (b == 0x0D && (j + 1 >= bytes.count || bytes[j + 1] != 0x0A)) {
                line += 1
                lineStart = j + 1
            }
            j += 1
        }
        var column = 1
        j = lineStart
        while j < offset {
            if bytes[j] & 0xC0 != 0x80 { column += 1 }
            j += 1
        }
        return SourceLocation(line: line, column: column, offset: offset)
    }
}

/// Line starts and scalar-count checkpoints of a text, for computing line and column in O(log n + 1 KiB).
struct LineTable: Sendable {
    private static let blockShift = 10
    /// The byte offsets where lines start; the first is the text's origin.
    let lineStarts: [Int]
    /// For each 1 KiB block, the number of UTF-8 continuation bytes before it.
    let continuations: [Int]

    init(_ text: SourceText) {
        var lineStarts = [text.origin]
        var continuations: [Int] = []
        let origin = text.origin
        var total = 0
        text.bytes.withUnsafeBufferPointer { bytes in
            let count = bytes.count
            continuations.reserveCapacity((count >> LineTable.blockShift) + 2)
            guard let p = bytes.baseAddress else { return }
            @inline(__always) func visit(_ j: Int) {
                let b = p[j]
                if b & 0xC0 == 0x80 {
                    total += 1
                } else if b == 0x0A || (b == 0x0D && (j + 1 >= count || p[j + 1] != 0x0A)), j >= origin {
                    lineStarts.append(j + 1)
                }
            }
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            var block = 0
            while block < count {
                continuations.append(total)
                let blockEnd = min(count, block + (1 << LineTable.blockShift))
                var j = block
                // Eight bytes at a time: count continuation bytes (10xxxxxx); look closer only at CR or LF.
                while j + 8 <= blockEnd {
                    let word = UnsafeRawPointer(p + j).loadUnaligned(as: UInt64.self)
                    let lf = word ^ (ones &* 0x0A)
                    let cr = word ^ (ones &* 0x0D)
                    if (((lf &- ones) & ~lf) | ((cr &- ones) & ~cr)) & highs != 0 {
                        for k in j..<(j + 8) { visit(k) }
                    } else {
                        total += (word & ~(word << 1) & highs).nonzeroBitCount
                    }
                    j += 8
                }
                while j < blockEnd {
                    visit(j)
                    j += 1
                }
                block = blockEnd
            }
        }
        continuations.append(total)
        self.lineStarts = lineStarts
        self.continuations = continuations
    }

    func location(ofOffset offset: Int, in text: SourceText) -> SourceLocation {
        let offset = max(0, min(offset, text.bytes.count))
        guard offset >= text.origin else { return SourceLocation(line: 1, column: 1, offset: offset) }
        // The last line start <= offset.
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
        }
        let lineStart = lineStarts[low]
        let scalars = text.bytes.withUnsafeBufferPointer { bytes in
            (offset - lineStart) - (continuationsBefore(offset, bytes) - continuationsBefore(lineStart, bytes))
        }
        return SourceLocation(line: low + 1, column: scalars + 1, offset: offset)
    }

    private func continuationsBefore(_ offset: Int, _ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let block = offset >> LineTable.blockShift
        var total = continuations[block]
        var j = block << LineTable.blockShift
        while j < offset {
            if bytes[j] & 0xC0 == 0x80 { total += 1 }
            j += 1
        }
        return total
    }
}

extension JSONPointer {
    /// The unescaped reference tokens of `pointer`, or `nil` if it is not a valid JSON pointer.
    static func tokens(of pointer: String) -> [String]? {
        if pointer.isEmpty { return [] }
        guard pointer.utf8.first == 0x2F else { return nil }
        var tokens: [String] = []
        for raw in pointer.utf8.dropFirst().split(separator: 0x2F, omittingEmptySubsequences: false) {
            let token = String(decoding: raw, as: UTF8.self)
            if raw.contains(0x7E) {
                guard let unescaped = unescape(token) else { return nil }
                tokens.append(unescaped)
            } else {
                tokens.append(token)
            }
        }
        return tokens
    }

    private static func unescape(_ token: String) -> String? {
        var out: [UInt8] = []
        var iterator = token.utf8.makeIterator()
        while let b = iterator.next() {
            guard b == 0x7E else {
                out.append(b)
                continue
            }
            switch iterator.next() {
            case 0x30: out.append(0x7E)
            case 0x31: out.append(0x2F)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The array index a token names: decimal digits without leading zeros.
    static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.count <= 18, first != 0x30 || utf8.count == 1 else { return nil }
        var index = 0
        for b in utf8 {
            guard b >= 0x30, b <= 0x39 else { return nil }
            index = index * 10 + Int(b - 0x30)
        }
        return index
    }
}
