# MIXLE_SANITIZE="address;undefined" builds every target with AddressSanitizer and
# UndefinedBehaviorSanitizer (the simulator tier of scripts/test). Undefined behaviour stops the
# program (no recovery), and float-cast-overflow is added to "undefined": GCC leaves it out, yet
# a NaN or out-of-range float converted to an integer is exactly what differs between the GPU
# (it saturates, NaN becomes 0) and the CPU (x86 gives INT_MIN), so a kernel must never do it.
if(MIXLE_SANITIZE)
  set(_mixle_sanitizers ${MIXLE_SANITIZE})
  if("undefined" IN_LIST _mixle_sanitizers)
    list(APPEND _mixle_sanitizers float-cast-overflow)
  endif()
  list(JOIN _mixle_sanitizers "," _mixle_sanitizer_flags)
  add_compile_options(-fsanitize=${_mixle_sanitizer_flags} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  # And bounds-checked standard containers: AddressSanitizer cannot see an index past a
  # std::array that lands on the next member of the same object.
  add_compile_definitions(_GLIBCXX_ASSERTIONS)
  add_link_options(-fsanitize=${_mixle_sanitizer_flags})
  # Tests that expect a sanitizer to stop a planted bug ask which ones are in force.
  foreach(_s address undefined thread)
    if(_s IN_LIST _mixle_sanitizers)
      string(TOUPPER ${_s} _S)
      add_compile_definitions(MIXLE_SANITIZE_${_S}=1)
    endif()
  endforeach()
  message(STATUS "mixle: sanitizers ${_mixle_sanitizer_flags}")
endif()
