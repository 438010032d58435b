// The run directory of a program's training (lm, vit): made and locked before anything is written,
// so that no run is ever overwritten or written by two trainings at once.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/file.h"
#include "io/json.h"

namespace qkv::examples {

// Makes `dir` if missing and takes its DirectoryLock, refusing with a ValueError naming --run and
// `program` ("lm train: ..."), before anything is written: a fresh training where the directory
// holds a run (its config.json; --resume continues it) or any other file; --resume where it holds
// no run; a directory another training holds. Then removes temporary files that a killed training
// left of `files` (the files it writes atomically) and checks that the directory can be written.
io::DirectoryLock prepare_run_directory(const std::filesystem::path& dir, bool resume, const std::string& program,
                                        const std::vector<std::string>& files);

// The JSON text `text`, its errors naming `source`.
io::Json parse_json_of(const std::string& text, const std::string& source);

}  // namespace qkv::examples
