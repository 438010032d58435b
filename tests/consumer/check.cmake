# Installs the qkv build in QKV_BUILD_DIR into a scratch prefix, then builds and runs the consumer.
file(REMOVE_RECURSE ${QKV_WORK_DIR})
set(prefix ${QKV_WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${QKV_BUILD_DIR} --prefix ${prefix})
set(extra)
if(QKV_SANITIZE)  # the installed library was built with the sanitizers; so must its consumer be
  set(extra -DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined)
endif()
run(${CMAKE_COMMAND} -S ${QKV_CONSUMER_SRC} -B ${QKV_WORK_DIR}/build ${extra}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${QKV_CXX_COMPILER} -DCMAKE_BUILD_TYPE=${QKV_BUILD_TYPE})
run(${CMAKE_COMMAND} --build ${QKV_WORK_DIR}/build)
run(${QKV_WORK_DIR}/build/consumer)
