// Not API. zlib's C interface, seen from Swift only through Sources/Datasets/Inflate.swift
// (the `.npz` entries' raw deflate streams).
#include <zlib.h>
