import{c as o,h as e}from"./chunk-QNVKSP7W.js";var n=o(null);function c(){return e(n)}function i(r,t=""){return`/project/${r}${t?"/"+t:""}`}export{n as a,c as b,i as c};
