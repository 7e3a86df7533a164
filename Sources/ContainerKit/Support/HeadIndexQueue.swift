/// A first-in, first-out queue: an array and the index of its first element, so taking from the front
/// costs O(1) instead of shifting the array. What was taken is released when the queue empties, or once
/// more than ``compactionThreshold`` elements were taken and they are more than half the array.
///
/// The one such queue of the package (the session turnstile's waiters and nested pushes, the durable
/// queue's committed records in memory, the memory record store's records).
///
/// ```swift
/// var queue = HeadIndexQueue<Int>()
/// queue.append(contentsOf: [1, 2, 3])
/// queue.popFirst()          // 1
/// queue.popFirst(upTo: 5)   // [2, 3]
/// ```
///
/// Its methods are inlinable, so a client module specializes them for its element type (unspecialized, every
/// element copy went through the type's value witnesses: about 1,800 instructions per `popFirst` of a chunk of
/// records).
package struct HeadIndexQueue<Element> {
    /// Taken elements kept before the array is compacted (when they are also more than half of it).
    @inlinable package static var compactionThreshold: Int { 4096 }

    @usableFromInline var elements: [Element] = []
    @usableFromInline var head = 0

    /// An empty queue.
    @inlinable package init() {}

    /// The elements waiting.
    @inlinable package var count: Int { elements.count - head }

    /// Whether nothing is waiting.
    @inlinable package var isEmpty: Bool { head == elements.count }

    /// Elements taken but not yet released (for tests of the compaction).
    @inlinable package var takenStorage: Int { head }

    /// The element `offset` places behind the first.
    @inlinable package subscript(offset: Int) -> Element { elements[head + offset] }

    /// Adds `element` at the back.
    @inlinable package mutating func append(_ element: Element) { elements.append(element) }

    /// Adds `newElements` at the back, in order.
    @inlinable package mutating func append(contentsOf newElements: some Sequence<Element>) {
        elements.append(contentsOf: newElements)
    }

    /// The first element, if any, left in place.
    @inlinable package var first: Element? { head < elements.count ? elements[head] : nil }

    /// Takes the first element, if any.
    @inlinable package mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let first = elements[head]
        head += 1
        compact()
        return first
    }

    /// Takes up to `limit` elements from the front, in order.
    @inlinable package mutating func popFirst(upTo limit: Int) -> [Element] {
        let end = min(elements.count, head + max(0, limit))
        let taken = Array(elements[head..<end])
        head = end
        compact()
        return taken
    }

    /// Drops up to `count` elements from the front.
    @inlinable package mutating func removeFirst(_ count: Int) {
        head = min(elements.count, head + max(0, count))
        compact()
    }

    /// Drops every element; `count` of them were waiting.
    @inlinable @discardableResult
    package mutating func removeAll() -> Int {
        defer {
            elements.removeAll()
            head = 0
        }
        return count
    }

    @inlinable mutating func compact() {
        if head == elements.count {
            elements.removeAll(keepingCapacity: elements.count <= Self.compactionThreshold)
            head = 0
        } else if head > Self.compactionThreshold && head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
    }
}

extension HeadIndexQueue: Sendable where Element: Sendable {}
