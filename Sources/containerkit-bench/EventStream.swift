import ContainerKit

/// The fixed event stream every implementation processes: Braze sample events and Cargo events, with typed
/// parameters, plus events no rule selects (about a quarter).
enum EventStream {
    static func make(count: Int) -> [(name: String, parameters: ValueMap)] {
        let templates: [(String, ValueMap)] = [
            (
                "logEvent",
                [
                    "eventName": "played song", "boolParam": true, "doubleParam": 2.5, "intParam": 3,
                    "stringParam": "jazz",
                ]
            ),
            ("logEvent", ["eventName": "paused song", "intParam": 7]),
            ("purchase_complete", ["price": 9.99]),
            ("signup", ["method": "email"]),
            ("tagEvent", ["eventName": "share"]),
            ("tagPurchase", ["currencyCode": "EUR", "totalRevenue": 19.5, "eventItems": 2]),
            ("identify", ["username": "ada", "userEmail": "ada@example.com"]),
            ("tagScreen", ["screenName": "home"]),
            ("applicationStart", [:]),
            ("tagLocationUpdate", [:]),
            ("tagActionUpdate", ["actionName": "download", "revenue": 1.5, "quantity": 2, "item": "song"]),
            ("screen_view", ["screenName": "home"]),
            ("app_background", [:]),
            ("scroll", ["depth": 50]),
            ("tagActionEnd", ["actionName": "download", "successfulAction": true]),
            ("setPrivacyStatus", ["privacyStatus": "optedin"]),
        ]
        return (0..<count).map { templates[$0 % templates.count] }
    }
}
