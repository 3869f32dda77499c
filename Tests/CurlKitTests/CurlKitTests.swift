import Testing
@testable import CurlKit
