# mixsparse-map.cmake: writes the shared library's version script (cmake -P, run by the build).
#   -DNM=nm -DLIBRARY=FILE -DUSERS=FILE -DTEMPLATE=mixsparse.map.in -DOUT=mixsparse.map
# LIBRARY and USERS list object files or archives, one per line: the library's own objects, and
# those of the program and the distributed layer. The internals exported are the msp__ symbols
# that the users leave undefined and the library defines: exactly what the program needs, so a
# new call into the library's internals needs no list kept by hand. OUT is rewritten only when
# its text changes (no relink otherwise).
cmake_minimum_required(VERSION 3.20)
function(msp_symbols list_file out_var)
  file(STRINGS "${list_file}" files)
  set(names "")
  if(files)
    execute_process(COMMAND "${NM}" ${ARGN} ${files} OUTPUT_VARIABLE out RESULT_VARIABLE rc
      ERROR_QUIET)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "mixsparse-map: ${NM} ${ARGN} failed on the files of ${list_file}")
    endif()
    string(REGEX MATCHALL "[ \t]msp__[A-Za-z0-9_]+" names "${out}")
    string(REGEX REPLACE "[ \t]" "" names "${names}")
    list(REMOVE_DUPLICATES names)
  endif()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

msp_symbols("${LIBRARY}" defined --defined-only --extern-only)
msp_symbols("${USERS}" used --undefined-only)
set(export "")
foreach(name IN LISTS used)
  if(name IN_LIST defined)
    list(APPEND export "${name}")
  endif()
endforeach()
list(SORT export)
set(MSP_PRIVATE_SYMBOLS "")
foreach(name IN LISTS export)
  string(APPEND MSP_PRIVATE_SYMBOLS "    ${name};\n")
endforeach()
configure_file("${TEMPLATE}" "${OUT}.new" @ONLY)
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUT}.new" "${OUT}")
file(REMOVE "${OUT}.new")
