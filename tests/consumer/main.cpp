#include <qkv/qkv.h>
#include <cstdio>
int main() { std::puts("consumer ok"); return 0; }
