import Foundation

/// The naive baseline: a `[String: Any]` interpreter in the style of the GTM seed's Braze provider code —
/// JSONSerialization output walked with `as?` casts, a linear scan of every rule per event, predicates and
/// macros re-resolved each time, argument maps built as `[String: Any]`.
struct NaiveImplementation {
    let macros: [[String: Any]]
    let tags: [[String: Any]]
    let predicates: [[String: Any]]
    let rules: [[Any]]
    let handler: (String, [String: Any]) -> Void

    init(path: String, handler: @escaping (String, [String: Any]) -> Void) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let root = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        let resource = root["resource"] as? [String: Any] ?? [:]
        macros = resource["macros"] as? [[String: Any]] ?? []
        tags = resource["tags"] as? [[String: Any]] ?? []
        predicates = resource["predicates"] as? [[String: Any]] ?? []
        rules = resource["rules"] as? [[Any]] ?? []
        self.handler = handler
    }

    func process(_ event: [String: Any]) {
        var fired = Set<Int>()
        var blocked = Set<Int>()
        for rule in rules {
            var passes = true
            var add: [Int] = []
            var block: [Int] = []
            for case let clause as [Any] in rule {
                guard let op = clause.first as? String else { continue }
                let indices = clause.dropFirst().compactMap { $0 as? Int }
                switch op {
                case "if": if !indices.allSatisfy({ test(predicates[$0], event) }) { passes = false }
                case "unless": if indices.contains(where: { test(predicates[$0], event) }) { passes = false }
                case "add": add = indices
                case "block": block = indices
                default: break
                }
            }
            if passes {
                fired.formUnion(add)
                blocked.formUnion(block)
            }
        }
        for index in fired.subtracting(blocked).sorted() {
            let tag = tags[index]
            guard tag["function"] as? String == "__funct", let classPath = tag["vtp_classPath"] as? String else {
                continue
            }
            var parameters: [String: Any] = [:]
            if let list = tag["vtp_functionArgument"] as? [Any] {
                for case let row as [Any] in list.dropFirst() {
                    guard row.count == 5, let key = row[2] as? String, let value = resolve(row[4], event) else {
                        continue
                    }
                    parameters[key] = value
                }
            }
            handler(classPath, parameters)
        }
    }

    func resolve(_ value: Any, _ event: [String: Any]) -> Any? {
        guard let list = value as? [Any], list.first as? String == "macro", let index = list.last as? Int else {
            return value
        }
        let macro = macros[index]
        switch macro["function"] as? String {
        case "__e": return event["event"]
        case "__md":
            guard let key = macro["vtp_key"] as? String else { return nil }
            if let found = event[key] { return found }
            return (macro["vtp_setDefaultValue"] as? Bool) == true ? macro["vtp_defaultValue"] : nil
        case "__c": return macro["vtp_value"]
        default: return nil
        }
    }

    func test(_ predicate: [String: Any], _ event: [String: Any]) -> Bool {
        guard let left = resolve(predicate["arg0"] ?? NSNull(), event), let right = predicate["arg1"] else {
            return false
        }
        let a = "\(left)"
        let b = "\(right)"
        switch predicate["function"] as? String {
        case "_eq": return a == b
        case "_cn": return a.contains(b)
        case "_sw": return a.hasPrefix(b)
        case "_ew": return a.hasSuffix(b)
        default: return false
        }
    }
}
