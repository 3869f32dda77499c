import Testing
@testable import CommandLineKit
