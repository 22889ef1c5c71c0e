/* Stands in for OpenCV's image codecs in a bundle for a machine with no package registry: monado-service links
 * cv::imread and cv::imwrite (calibration and debug images) but a simulated-headset session never calls them;
 * the real library would bring GDAL and every image codec with it. Called anyway, it aborts. */
#include <stdlib.h>
void stub_imread(void) __asm__("_ZN2cv6imreadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEi");
void stub_imwrite(void) __asm__("_ZN2cv7imwriteERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKNS_11_InputArrayERKSt6vectorIiSaIiEE");
void stub_imread(void) { abort(); }
void stub_imwrite(void) { abort(); }
