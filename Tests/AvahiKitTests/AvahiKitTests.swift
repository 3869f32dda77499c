import Testing
@testable import AvahiKit
