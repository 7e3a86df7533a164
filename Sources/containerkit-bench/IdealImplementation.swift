import ContainerKit

/// The ideal: hand-written Swift that makes exactly the decisions of the Braze sample (GTM-5HM9ZRX) and
/// Cargo-android (GTM-NFJ2XRG) containers and builds the same argument maps, with no interpretation.
struct IdealImplementation {
    let handler: (String, ValueMap) -> Void
    var unsupportedFired = 0

    private func put(_ map: inout ValueMap, _ key: String, _ value: Value?) {
        if let value { map[key] = value }
    }

    mutating func process(_ name: String, _ p: ValueMap) {
        braze(name, p)
        cargo(name, p)
    }

    private func braze(_ name: String, _ p: ValueMap) {
        if name == "logEvent" {
            var m = ValueMap(minimumCapacity: 6)
            put(&m, "eventName", p["eventName"])
            put(&m, "boolParam", p["boolParam"])
            put(&m, "doubleParam", p["doubleParam"])
            put(&m, "intParam", p["intParam"])
            put(&m, "stringParam", p["stringParam"])
            m["actionType"] = "logEvent"
            handler("com.appboy.googletagmanager.BrazeGtmTagProvider", m)
        }
        if TextSearchIdeal.contains(name, "purchase") {
            handler("path.to.Braze", ["event_name": "purchase", "prop1": "1", "prop2": "2"])
        }
        if TextSearchIdeal.contains(name, "signup") {
            handler("path.to.Braze", ["event_name": "signup", "prop1": "1", "prop2": "2"])
        }
    }

    private mutating func cargo(_ name: String, _ p: ValueMap) {
        let tags = "com.fiftyfive.cargo.Tags"
        switch name {
        case "applicationStart":
            handler(tags, ["applicationId": "708090462697956", "enableDebug": "true", "handlerMethod": "FB_init"])
            handler(
                tags,
                [
                    "handlerMethod": "AT_init", "log": "logc407", "logSSL": "logs1407", "site": "575114",
                    "enableDebug": "true",
                ]
            )
            handler(
                tags,
                [
                    "handlerMethod": "TUN_init", "advertiserId": "165042",
                    "conversionKey": "ffbf699d5cb077d9bccfdeb6202383f4",
                ]
            )
            var m = ValueMap(minimumCapacity: 3)
            m["handlerMethod"] = "ADB_init"
            put(&m, "enableDebug", p["enableDebug"])
            put(&m, "overrideConfigPath", p["overrideConfigPath"])
            handler(tags, m)
        case "tagEvent":
            var fb = ValueMap(minimumCapacity: 2)
            put(&fb, "eventName", p["eventName"])
            fb["handlerMethod"] = "FB_tagEvent"
            handler(tags, fb)
            var at = ValueMap(minimumCapacity: 4)
            at["handlerMethod"] = "AT_tagEvent"
            put(&at, "eventName", p["eventName"])
            at["eventType"] = "sendTouch"
            at["chapter1"] = "sent from emulator"
            handler(tags, at)
            unsupportedFired += 2  // __ua 14 and __fm 16
            var tun = ValueMap(minimumCapacity: 5)
            tun["handlerMethod"] = "TUN_tagEvent"
            put(&tun, "eventName", p["eventName"])
            tun["eventCurrencyCode"] = "EUR"
            tun["eventAttribute1"] = "testAttributeOne"
            tun["eventAttribute2"] = "testAttributeTwo"
            tun["eventRevenue"] = "5.55"
            tun["eventQuantity"] = "10"
            handler(tags, tun)
            var adb = ValueMap(minimumCapacity: 4)
            put(&adb, "eventName", p["eventName"])
            adb["handlerMethod"] = "ADB_tagEvent"
            adb["truc"] = "muche"
            adb["baba"] = "oRhum"
            handler(tags, adb)
        case "tagPurchase":
            var fb = ValueMap(minimumCapacity: 3)
            put(&fb, "transactionCurrencyCode", p["currencyCode"])
            put(&fb, "transactionTotal", p["totalRevenue"])
            fb["handlerMethod"] = "FB_tagPurchase"
            handler(tags, fb)
            unsupportedFired += 1  // __fm 17
            var tun = ValueMap(minimumCapacity: 5)
            tun["handlerMethod"] = "TUN_tagEvent"
            put(&tun, "eventCurrencyCode", p["currencyCode"])
            put(&tun, "eventRevenue", p["totalRevenue"])
            put(&tun, "eventItems", p["eventItems"])
            tun["eventName"] = "purchase"
            handler(tags, tun)
        case "identify":
            handler(tags, ["handlerMethod": "AT_identify", "userId": "5542"])
            var tun = ValueMap(minimumCapacity: 4)
            tun["handlerMethod"] = "TUN_identify"
            tun["userName"] = p["username"] ?? "none"
            put(&tun, "userEmail", p["userEmail"])
            tun["userId"] = "ID4255"
            handler(tags, tun)
        case "tagScreen":
            var at = ValueMap(minimumCapacity: 4)
            at["handlerMethod"] = "AT_tagScreen"
            put(&at, "screenName", p["screenName"])
            at["level2"] = "1"
            at["chapter1"] = "tagScreenButton"
            handler(tags, at)
            unsupportedFired += 1  // __ua 15
            var adb = ValueMap(minimumCapacity: 3)
            adb["handlerMethod"] = "ADB_tagScreen"
            put(&adb, "screenName", p["screenName"])
            adb["screenType"] = "HP"
            handler(tags, adb)
        case "tagActionStart":
            var m = ValueMap(minimumCapacity: 2)
            m["handlerMethod"] = "ADB_trackTimeStart"
            put(&m, "actionName", p["actionName"])
            handler(tags, m)
        case "tagActionUpdate":
            var m = ValueMap(minimumCapacity: 5)
            m["handlerMethod"] = "ADB_trackTimeUpdate"
            put(&m, "actionName", p["actionName"])
            put(&m, "revenue", p["revenue"])
            put(&m, "quantity", p["quantity"])
            put(&m, "item", p["item"])
            handler(tags, m)
        case "tagActionEnd":
            var m = ValueMap(minimumCapacity: 3)
            m["handlerMethod"] = "ADB_trackTimeEnd"
            put(&m, "actionName", p["actionName"])
            put(&m, "successfulAction", p["successfulAction"])
            handler(tags, m)
        case "sendQueueHits":
            handler(tags, ["handlerMethod": "ADB_sendQueueHits"])
        case "clearQueue":
            handler(tags, ["handlerMethod": "ADB_clearQueue"])
        case "setPrivacyStatus":
            var m = ValueMap(minimumCapacity: 2)
            m["handlerMethod"] = "ADB_setPrivacyStatus"
            put(&m, "privacyStatus", p["privacyStatus"])
            handler(tags, m)
        default:
            break
        }
        if TextSearchIdeal.contains(name, "tagLocation") { handler(tags, ["handlerMethod": "ADB_trackLocation"]) }
    }
}

/// The same byte search ContainerKit uses, so the ideal is not handicapped by Foundation's `contains`.
enum TextSearchIdeal {
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        var haystack = haystack
        var needle = needle
        return haystack.withUTF8 { h in
            needle.withUTF8 { n in
                guard !n.isEmpty, n.count <= h.count else { return n.isEmpty }
                var i = 0
                while i + n.count <= h.count {
                    if h[i] == n[0] {
                        var j = 1
                        while j < n.count && h[i + j] == n[j] { j += 1 }
                        if j == n.count { return true }
                    }
                    i += 1
                }
                return false
            }
        }
    }
}
