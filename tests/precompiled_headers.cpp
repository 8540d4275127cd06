// The program that owns the test programs' precompiled headers
// (tests/CMakeLists.txt): each test program reuses them instead of parsing
// GoogleTest and the standard headers again. It has no tests of its own.
