/// What a parser records of where a document's values are, as it reads them (the JSON and XML property list
/// parsers share it): one node per value in document order, each container's children and (for objects) their
/// keys, and the repeated keys met. ``result(_:text:)`` turns it into a ``SourceMap`` and ``DuplicateKey``s.
struct SourceMapBuilder {
    var nodes: [SourceMap.Node] = []
    var children: [Int32] = []
    var childKeys: [String] = []
    var objectIndexes: [Int32: [ByteKey: Int32]] = [:]
    /// Repeated keys: the pointer of their object, the key, and the offset of the repeated occurrence.
    var duplicates: [(pointer: String, key: String, offset: Int)] = []

    /// A builder for a document of `byteCount` bytes, its tables sized for one value per 16 bytes when `record`.
    init(byteCount: Int, record: Bool) {
        guard record else { return }
        nodes.reserveCapacity(max(16, byteCount / 16))
        children.reserveCapacity(max(16, byteCount / 16))
        childKeys.reserveCapacity(max(16, byteCount / 16))
    }

    /// A node for the value that starts at byte `offset`; `keyOffset` is its member key's, or -1. Returns its index.
    @inline(__always)
    mutating func begin(at offset: Int, keyOffset: Int) -> Int32 {
        nodes.append(
            SourceMap.Node(
                offset: Int32(truncatingIfNeeded: offset),
                keyOffset: Int32(truncatingIfNeeded: keyOffset),
                childStart: 0,
                childCount: -1,
                isObject: false
            )
        )
        return Int32(truncatingIfNeeded: nodes.count - 1)
    }

    /// Closes container `node`: its children's nodes, in document order, and for an object their keys (an object
    /// of more than 16 members gets a hash index; a repeated key finds its last occurrence).
    mutating func finish(
        _ node: Int32,
        isObject: Bool,
        children nodes: some Collection<Int32>,
        keys: some Collection<String>
    ) {
        let start = children.count
        children.append(contentsOf: nodes)
        let count = children.count - start
        if isObject {
            childKeys.append(contentsOf: keys)
            if count > 16 {
                var index = [ByteKey: Int32](minimumCapacity: count)
                for k in start..<(start + count) { index[ByteKey(childKeys[k])] = children[k] }
                objectIndexes[node] = index
            }
        } else {
            childKeys.append(contentsOf: repeatElement("", count: count))
        }
        let n = Int(node)
        self.nodes[n].childStart = Int32(truncatingIfNeeded: start)
        self.nodes[n].childCount = Int32(truncatingIfNeeded: count)
        self.nodes[n].isObject = isObject
    }

    /// The parse's result: `value`, the source map when positions were recorded, and the repeated keys located.
    func result(_ value: Value, text: SourceText, recorded: Bool) -> JSONParser.Result {
        guard recorded || !duplicates.isEmpty else {
            return JSONParser.Result(value: value, sourceMap: nil, duplicateKeys: [])
        }
        let lines = LineTable(text)
        let sourceMap =
            recorded
            ? SourceMap(
                text: text,
                lines: lines,
                nodes: nodes,
                children: children,
                childKeys: childKeys,
                objectIndexes: objectIndexes
            ) : nil
        let located = duplicates.map {
            DuplicateKey(pointer: $0.pointer, key: $0.key, location: lines.location(ofOffset: $0.offset, in: text))
        }
        return JSONParser.Result(value: value, sourceMap: sourceMap, duplicateKeys: located)
    }
}

extension SourceText {
    /// Where a string, container or element that an error at `errorOffset` is inside began, for the error's
    /// message (shown after the error's own line:column): `column 7` on the error's line, else `3:7`. A text read
    /// alone (one line of a JSON-lines file, a request body) is then placed right wherever its caller says it is.
    func opening(_ offset: Int, errorAt errorOffset: Int) -> String {
        let open = location(ofOffset: offset)
        let line = location(ofOffset: errorOffset).line
        return open.line == line ? "column \(open.column)" : "\(open.line):\(open.column)"
    }
}

extension UTF8Validation {
    /// A byte as messages show it: `0x0a`, `0xff`.
    static func hex(_ b: UInt8) -> String {
        let digits = String(b, radix: 16)
        return "0x" + (digits.count < 2 ? "0" : "") + digits
    }
}
