// The doctest entry point for the whole suite; the suites live in the folders that mirror the library.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
